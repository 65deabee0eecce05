-- Orders, keyed by their UUIDv7 id so a redelivered Kafka event is a no-op.
--
-- The per-user limit is a partial unique index over live statuses only: a plain
-- UNIQUE (item, user) would refuse a buyer's new order after the first one expired and so leak the
-- unit that expiry returned. slot is which of the user's per-user-limit places the order occupies
-- (0..15, the bit of the Redis buyer record), which lets a limit above 1 work with one index.

-- +goose Up
CREATE TABLE orders (
    id         uuid        PRIMARY KEY,
    sale_id    text        NOT NULL,
    item_id    text        NOT NULL,
    user_id    text        NOT NULL CHECK (char_length(user_id) BETWEEN 1 AND 128),
    slot       smallint    NOT NULL CHECK (slot BETWEEN 0 AND 15),
    status     text        NOT NULL CHECK (status IN ('PENDING', 'PAID', 'EXPIRED', 'CANCELLED', 'FAILED')),
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (sale_id, item_id) REFERENCES sale_items (sale_id, id)
);

CREATE UNIQUE INDEX orders_live_per_user_slot
    ON orders (sale_id, item_id, user_id, slot)
    WHERE status IN ('PENDING', 'PAID');

CREATE INDEX orders_item_status ON orders (sale_id, item_id, status);

-- For the expiry job: pending orders past their expiry, oldest first.
CREATE INDEX orders_status_expires ON orders (status, expires_at);

-- +goose Down
DROP TABLE orders;
