-- Flash-sale schema; every statement is idempotent so Migrate can run at every start.
CREATE TABLE IF NOT EXISTS flash_sale_item (
    id       BIGINT PRIMARY KEY,
    name     TEXT NOT NULL DEFAULT '',
    quantity INT  NOT NULL,
    sold     INT  NOT NULL DEFAULT 0,
    CONSTRAINT flash_sale_item_quantity_nonnegative CHECK (quantity >= 0),
    CONSTRAINT flash_sale_item_sold_le_quantity CHECK (sold <= quantity),
    CONSTRAINT flash_sale_item_sold_nonnegative CHECK (sold >= 0)
);

CREATE TABLE IF NOT EXISTS flash_sale_order (
    id         UUID PRIMARY KEY,
    item_id    BIGINT NOT NULL REFERENCES flash_sale_item(id),
    user_id    TEXT NOT NULL,
    status     TEXT NOT NULL CHECK (status IN ('PENDING', 'PAID', 'CANCELLED')),
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    CONSTRAINT flash_sale_order_one_per_user UNIQUE (item_id, user_id)
);
