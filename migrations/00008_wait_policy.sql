-- What a reserve does when fewer replicas acknowledged it than the sale's wait_replicas asked for
-- (package sale: count or release). Empty for a sale that does not wait, and for sales saved
-- before this column, which keep the behaviour they had: count.

-- +goose Up
ALTER TABLE sales ADD COLUMN wait_policy text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE sales DROP COLUMN wait_policy;
