-- place_order also records the order's stock shard (the buyer's home shard in Redis), so releasing
-- the order's unit later goes to the right shard key without asking the sale definition again.
--
-- A new signature rather than CREATE OR REPLACE: PostgreSQL treats a different argument list as a
-- different function, so the 7-argument version is dropped explicitly; leaving it would let a
-- caller that forgets the shard silently record shard 0. The body is 00003's, decided the same way
-- under the item row lock (see that file for why there is no EXCEPTION block).

-- +goose Up
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
    -- Redelivery is the common retry: answer it without touching the item row.
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

    -- Under the lock (each statement sees what committed before it): the same id placed by a
    -- concurrent consumer that held the lock first.
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

DROP FUNCTION place_order(uuid, text, text, text, smallint, timestamptz, timestamptz);

-- +goose Down
-- +goose StatementBegin
CREATE FUNCTION place_order(
    p_id      uuid,
    p_sale    text,
    p_item    text,
    p_user    text,
    p_slot    smallint,
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
    INSERT INTO orders (id, sale_id, item_id, user_id, slot, status, created_at, expires_at)
    VALUES (p_id, p_sale, p_item, p_user, p_slot, 'PENDING', p_created, p_expires);
    RETURN 'placed';
END;
$$;
-- +goose StatementEnd

DROP FUNCTION place_order(uuid, text, text, text, smallint, smallint, timestamptz, timestamptz);
