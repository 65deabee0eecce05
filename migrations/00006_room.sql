-- The waiting room and the rate limits of a sale. They are settings an operator reads and changes as
-- a whole (admission rate, fair start, fail mode, ...), never queried by field, so they are kept as
-- JSON documents validated by the application (package sale).

-- +goose Up
ALTER TABLE sales
    ADD COLUMN room        jsonb NOT NULL DEFAULT '{}'::jsonb,
    ADD COLUMN rate_limits jsonb NOT NULL DEFAULT '{}'::jsonb;

-- +goose Down
ALTER TABLE sales DROP COLUMN rate_limits, DROP COLUMN room;
