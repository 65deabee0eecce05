-- The reservation lifecycle: sale end time and replica waits, stock shards per item, and what an
-- order needs for payment and release.
--
-- paying_since is the payment claim: paying sets it (only while the order is PENDING, unclaimed and
-- not yet past expires_at) in one UPDATE, and the expiry job only expires unclaimed orders, so a
-- payment and an expiry can never both win. shard is the stock shard that holds the order's unit
-- (the buyer's home shard), so a release goes to the right Redis key without asking the sale.

-- +goose Up
ALTER TABLE sales
    ADD COLUMN closes_at       timestamptz NULL,
    ADD COLUMN wait_replicas   int    NOT NULL DEFAULT 0 CHECK (wait_replicas BETWEEN 0 AND 16),
    ADD COLUMN wait_timeout_ms bigint NOT NULL DEFAULT 0 CHECK (wait_timeout_ms BETWEEN 0 AND 5000),
    ADD CONSTRAINT sales_closes_after_opens CHECK (closes_at IS NULL OR closes_at > opens_at);

ALTER TABLE sale_items
    ADD COLUMN shards int NOT NULL DEFAULT 1 CHECK (shards BETWEEN 1 AND 64);

ALTER TABLE orders
    ADD COLUMN shard        smallint    NOT NULL DEFAULT 0 CHECK (shard BETWEEN 0 AND 63),
    ADD COLUMN paying_since timestamptz NULL,
    ADD COLUMN payment_ref  text        NULL CHECK (char_length(payment_ref) <= 128),
    ADD CONSTRAINT orders_claim_only_pending CHECK (paying_since IS NULL OR status = 'PENDING');

-- For the claim resolver: payments that started and never finished (a server died mid-charge).
CREATE INDEX orders_paying_since ON orders (paying_since) WHERE paying_since IS NOT NULL;

-- +goose Down
DROP INDEX orders_paying_since;
ALTER TABLE orders DROP CONSTRAINT orders_claim_only_pending,
    DROP COLUMN payment_ref, DROP COLUMN paying_since, DROP COLUMN shard;
ALTER TABLE sale_items DROP COLUMN shards;
ALTER TABLE sales DROP CONSTRAINT sales_closes_after_opens,
    DROP COLUMN wait_timeout_ms, DROP COLUMN wait_replicas, DROP COLUMN closes_at;
