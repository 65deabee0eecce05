-- Each item's Redis state has a generation, its epoch, bumped when a rebuild replaces that state
-- (fsctl reconcile --rebuild-redis). Every reservation carries the epoch of the state it was made
-- on into its OrderPlaced, and place_order refuses one from an older epoch as stale: a hand-off
-- that reached the log after the rebuild's snapshot. Its unit is on sale again in the rebuilt
-- Redis, so recording it would sell that unit twice; and its buyer was not told RESERVED (the
-- server checks the epoch after the hand-off and answers 503 when it moved). The check runs under
-- the item row lock the rebuild's bump takes, so an order is either recorded before the bump, and
-- counted in the snapshot the rebuild loads, or refused after it.
--
-- A new signature, as 00005 did: the 8-argument place_order is dropped, so no caller can leave the
-- epoch out and have every order of a rebuilt item accepted.

-- +goose Up
ALTER TABLE sale_items ADD COLUMN epoch bigint NOT NULL DEFAULT 0;

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

DROP FUNCTION place_order(uuid, text, text, text, smallint, smallint, timestamptz, timestamptz);

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
    p_expires timestamptz
) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    v_quantity bigint;
    v_sold     bigint;
BEGIN
    PERFORM 1 FROM orders WHERE id = p_id;
    IF FOUND THEN
        RETURN 'duplicate';
    END IF;

    SELECT quantity, sold INTO v_quantity, v_sold
      FROM sale_items WHERE sale_id = p_sale AND id = p_item
       FOR UPDATE;
    IF NOT FOUND THEN
        RETURN 'unknown_item';
    END IF;

    PERFORM 1 FROM orders WHERE id = p_id;
    IF FOUND THEN
        RETURN 'duplicate';
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

DROP FUNCTION place_order(uuid, text, text, text, smallint, smallint, timestamptz, timestamptz, bigint);
ALTER TABLE sale_items DROP COLUMN epoch;
