-- Two sale options (package sale): per_sale_limit caps the units one buyer may hold across all the
-- sale's items together (0: no cap across items; perUserLimit still caps each item), and reveal
-- hides the purchase endpoint until the opening (a JSON document like room: {"enabled", "ttl"}).
-- Sales saved before these columns keep the behaviour they had: no cap, nothing hidden.

-- +goose Up
ALTER TABLE sales
    ADD COLUMN per_sale_limit integer NOT NULL DEFAULT 0 CHECK (per_sale_limit BETWEEN 0 AND 16),
    ADD COLUMN reveal         jsonb   NOT NULL DEFAULT '{}'::jsonb;

-- +goose Down
ALTER TABLE sales DROP COLUMN reveal, DROP COLUMN per_sale_limit;
