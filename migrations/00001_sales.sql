-- Sales and their items. sold is the number of live (pending or paid) units as PostgreSQL knows
-- them; the CHECKs are the last line of defence against oversell whatever the layers above do.

-- +goose Up
CREATE TABLE sales (
    id             text        PRIMARY KEY,
    name           text        NOT NULL DEFAULT '',
    opens_at       timestamptz NOT NULL,
    per_user_limit int         NOT NULL CHECK (per_user_limit BETWEEN 1 AND 16),
    hold_ttl_ms    bigint      NOT NULL CHECK (hold_ttl_ms >= 1000),
    paused         boolean     NOT NULL DEFAULT false,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE sale_items (
    sale_id     text   NOT NULL REFERENCES sales (id),
    id          text   NOT NULL,
    name        text   NOT NULL DEFAULT '',
    quantity    bigint NOT NULL,
    sold        bigint NOT NULL DEFAULT 0,
    price_cents bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (sale_id, id),
    CONSTRAINT sale_items_sold_le_quantity CHECK (sold <= quantity),
    CONSTRAINT sale_items_sold_nonnegative CHECK (sold >= 0),
    CONSTRAINT sale_items_quantity_nonnegative CHECK (quantity >= 0)
);

-- +goose Down
DROP TABLE sale_items;
DROP TABLE sales;
