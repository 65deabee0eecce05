-- place_order records one reserved order and takes its unit of stock in one call, so a consumer can
-- pipeline a whole batch of them in one round-trip. It answers:
--   'placed'        the order is PENDING and the item's sold went up by one
--   'duplicate'     an order with this id exists already (Kafka redelivery): nothing changed
--   'oversold'      the item has no unit left: nothing changed
--   'limit'         the user already has a live order in this slot for this item: nothing changed
--   'unknown_item'  the sale or item does not exist: nothing changed
-- Any other failure (a CHECK on the order's fields, say) raises, failing the whole transaction.
--
-- The item row lock is the first lock a placement takes, so callers that place a batch in item
-- order cannot deadlock, and under it every check is decided before anything is written: whoever
-- holds the item lock is the only one inserting that item's orders. No EXCEPTION block is needed,
-- so a batch of hundreds of placements opens no subtransactions (more than 64 in one transaction
-- overflow PostgreSQL's per-backend cache and slow every other session's snapshots). The CHECK
-- on sold and the partial unique index still stand behind these checks: if anything bypassed them,
-- the statement raises and the whole batch fails rather than oversell.

-- +goose Up
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
    INSERT INTO orders (id, sale_id, item_id, user_id, slot, status, created_at, expires_at)
    VALUES (p_id, p_sale, p_item, p_user, p_slot, 'PENDING', p_created, p_expires);
    RETURN 'placed';
END;
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION place_order(uuid, text, text, text, smallint, timestamptz, timestamptz);
