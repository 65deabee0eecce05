-- The buyer's Idempotency-Key is kept with the order (the OrderPlaced carries it), so a rebuild of a
-- lost Redis gives each live order its idempotency record back: a buyer who replays the key after
-- the loss hears the same RESERVED and order id, not ALREADY_PURCHASED from the restored slot
-- (chaos seeds 37, 45 and 57). NULL for orders placed without a key or before this migration.

-- +goose Up
ALTER TABLE orders ADD COLUMN idem_key text CHECK (length(idem_key) <= 128);

-- +goose Down
ALTER TABLE orders DROP COLUMN idem_key;
