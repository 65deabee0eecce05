-- place_order records one reserved order and takes its unit of stock in one call, so a consumer can
-- pipeline a whole batch of them in one round-trip. It answers:
--   'placed'        the order is PENDING and the item's sold went up by one
--   'duplicate'     an order with this id exists already (Kafka redelivery): nothing changed
--   'oversold'      the item has no unit left: nothing changed
--   'limit'         the user already has a live order in this slot for this item: nothing changed
--   'unknown_item'  the sale or item does not exist: nothing changed
-- Any other failure (a CHECK on the order's fields, say) raises, failing the whole transaction.
--
-- The stock bump comes before the insert on purpose: the item row lock is then the first lock a
-- placement takes, so callers that place a batch in item order cannot deadlock on the per-user
-- unique index (whoever holds the item lock is the only one inserting that item's keys).

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
BEGIN
    -- Redelivery is the common retry: answer it without touching the item row.
    PERFORM 1 FROM orders WHERE id = p_id;
    IF FOUND THEN
        RETURN 'duplicate';
    END IF;

    BEGIN
        UPDATE sale_items SET sold = sold + 1
         WHERE sale_id = p_sale AND id = p_item AND sold < quantity;
        IF NOT FOUND THEN
            PERFORM 1 FROM sale_items WHERE sale_id = p_sale AND id = p_item;
            IF FOUND THEN
                RETURN 'oversold';
            END IF;
            RETURN 'unknown_item';
        END IF;

        INSERT INTO orders (id, sale_id, item_id, user_id, slot, status, created_at, expires_at)
        VALUES (p_id, p_sale, p_item, p_user, p_slot, 'PENDING', p_created, p_expires)
        ON CONFLICT (id) DO NOTHING;
        IF NOT FOUND THEN
            -- The same id committed by a concurrent transaction after our first look: undo the bump.
            RAISE EXCEPTION USING ERRCODE = 'FS001', MESSAGE = 'duplicate order id';
        END IF;
        RETURN 'placed';
    EXCEPTION
        WHEN unique_violation THEN
            RETURN 'limit';
        WHEN foreign_key_violation THEN
            RETURN 'unknown_item';
        WHEN SQLSTATE 'FS001' THEN
            RETURN 'duplicate';
    END;
END;
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION place_order(uuid, text, text, text, smallint, timestamptz, timestamptz);
