-- The per-sale limit's safety net (sales.per_sale_limit, migration 00009). Redis enforces the limit
-- with a claim per buyer and per-sale slot taken before the item's reserve (package stock); each
-- order of a limited sale carries the slot it holds into its OrderPlaced, and PostgreSQL keeps the
-- buyer's live orders of the sale in distinct slots, as orders_live_per_user_slot does per item. A
-- claim lost with a Redis node, which Redis would give again, cannot sell a buyer one unit more
-- than the limit: the second order in that slot is refused ('sale_limit') and its unit released.
--
-- sale_slot is NULL for orders of sales without a per-sale limit and for orders placed before it.
-- A new place_order signature, as 00005 and 00007 did: the 9-argument one is dropped.

-- +goose Up
ALTER TABLE orders ADD COLUMN sale_slot smallint CHECK (sale_slot BETWEEN 0 AND 15);

CREATE UNIQUE INDEX orders_live_per_sale_slot
    ON orders (sale_id, user_id, sale_slot)
    WHERE sale_slot IS NOT NULL AND status IN ('PENDING', 'PAID');

-- +goose StatementBegin
CREATE FUNCTION place_order(
    p_id      uuid,
    p_sale    text,
    p_item    text,
    p_user    text,
    p_slot    smallint,
    p_shard   smallint,
    p_created timestamptz,
    p_expires timestamptz,
    p_epoch   bigint,
    p_sale_slot smallint
) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    v_quantity bigint;
    v_sold     bigint;
    v_epoch    bigint;
BEGIN
    -- Redelivery is the common retry: answer it without touching the item row.
    PERFORM 1 FROM orders WHERE id = p_id;
    IF FOUND THEN
        RETURN 'duplicate';
    END IF;

    SELECT quantity, sold, epoch INTO v_quantity, v_sold, v_epoch
      FROM sale_items WHERE sale_id = p_sale AND id = p_item
       FOR UPDATE;
    IF NOT FOUND THEN
        RETURN 'unknown_item';
    END IF;

    -- Under the lock (each statement sees what committed before it): the same id placed by a
    -- concurrent consumer that held the lock first.
    PERFORM 1 FROM orders WHERE id = p_id;
    IF FOUND THEN
        RETURN 'duplicate';
    END IF;
    IF p_epoch < v_epoch THEN
        RETURN 'stale';
    END IF;
    IF v_sold >= v_quantity THEN
        RETURN 'oversold';
    END IF;
    PERFORM 1 FROM orders
     WHERE sale_id = p_sale AND item_id = p_item AND user_id = p_user AND slot = p_slot
       AND status IN ('PENDING', 'PAID');
    IF FOUND THEN
        RETURN 'limit';
    END IF;
    -- The per-sale limit's net: each order of a limited sale holds one of its buyer's per-sale
    -- slots. The item row lock does not cover the buyer's orders of other items, so two orders in
    -- the same slot placed at once by two consumers get past this check together; the partial
    -- unique index then refuses the second one's INSERT, its batch fails and is retried, and the
    -- retry answers here.
    IF p_sale_slot IS NOT NULL THEN
        PERFORM 1 FROM orders
         WHERE sale_id = p_sale AND user_id = p_user AND sale_slot = p_sale_slot
           AND status IN ('PENDING', 'PAID');
        IF FOUND THEN
            RETURN 'sale_limit';
        END IF;
    END IF;

    UPDATE sale_items SET sold = sold + 1 WHERE sale_id = p_sale AND id = p_item;
    INSERT INTO orders (id, sale_id, item_id, user_id, slot, shard, status, created_at, expires_at, sale_slot)
    VALUES (p_id, p_sale, p_item, p_user, p_slot, p_shard, 'PENDING', p_created, p_expires, p_sale_slot);
    RETURN 'placed';
END;
$$;
-- +goose StatementEnd

DROP FUNCTION place_order(uuid, text, text, text, smallint, smallint, timestamptz, timestamptz, bigint);

-- +goose Down
-- +goose StatementBegin
CREATE FUNCTION place_order(
    p_id      uuid,
    p_sale    text,
    p_item    text,
    p_user    text,
    p_slot    smallint,
    p_shard   smallint,
    p_created timestamptz,
    p_expires timestamptz,
    p_epoch   bigint
) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    v_quantity bigint;
    v_sold     bigint;
    v_epoch    bigint;
BEGIN
    -- Redelivery is the common retry: answer it without touching the item row.
    PERFORM 1 FROM orders WHERE id = p_id;
    IF FOUND THEN
        RETURN 'duplicate';
    END IF;

    SELECT quantity, sold, epoch INTO v_quantity, v_sold, v_epoch
      FROM sale_items WHERE sale_id = p_sale AND id = p_item
       FOR UPDATE;
    IF NOT FOUND THEN
        RETURN 'unknown_item';
    END IF;

    -- Under the lock (each statement sees what committed before it): the same id placed by a
    -- concurrent consumer that held the lock first.
    PERFORM 1 FROM orders WHERE id = p_id;
    IF FOUND THEN
        RETURN 'duplicate';
    END IF;
    IF p_epoch < v_epoch THEN
        RETURN 'stale';
    END IF;
    IF v_sold >= v_quantity THEN
        RETURN 'oversold';
    END IF;
    PERFORM 1 FROM orders
     WHERE sale_id = p_sale AND item_id = p_item AND user_id = p_user AND slot = p_slot
       AND status IN ('PENDING', 'PAID');
    IF FOUND THEN
        RETURN 'limit';
    END IF;

    UPDATE sale_items SET sold = sold + 1 WHERE sale_id = p_sale AND id = p_item;
    INSERT INTO orders (id, sale_id, item_id, user_id, slot, shard, status, created_at, expires_at)
    VALUES (p_id, p_sale, p_item, p_user, p_slot, p_shard, 'PENDING', p_created, p_expires);
    RETURN 'placed';
END;
$$;
-- +goose StatementEnd

DROP FUNCTION place_order(uuid, text, text, text, smallint, smallint, timestamptz, timestamptz, bigint, smallint);
DROP INDEX orders_live_per_sale_slot;
ALTER TABLE orders DROP COLUMN sale_slot;
