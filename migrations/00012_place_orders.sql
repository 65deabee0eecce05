-- place_orders: a consumer's whole batch in one call, with the same answer for each order as
-- place_order gives (00010): 'placed', 'duplicate', 'unknown_item', 'stale', 'oversold', 'limit' or
-- 'sale_limit', in the order of the arrays. place_order called once an order took the item's row
-- lock and updated its sold count for every order, so the 500 orders of a batch for one hot item
-- left 500 versions of that one row in the transaction, and every later lock, update and foreign
-- key check of the batch walked them: about 90 µs of PostgreSQL's CPU an order on the 2-core box,
-- a fifth of the box's CPU in a 50,000 -> 10,000 burst. Here each run of orders for one item locks
-- the row once (at its first order that is not a redelivery, as place_order did), decides every
-- order against the count so far, and adds what it placed to sold in one update at the end of the
-- run; the orders are written with their buyer's Idempotency-Key (00011) in the same insert.
--
-- The arrays are parallel, one element an order, sorted by (sale, item) by the caller so that
-- concurrent batches take item row locks in the same order. p_sale_slots and p_keys hold NULL for
-- none. A redelivered order keeps a key it was placed without (as PlaceBatch's update did before).
-- place_order stays for callers that place one order at a time.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION place_orders(
    p_ids        uuid[],
    p_sales      text[],
    p_items      text[],
    p_users      text[],
    p_slots      smallint[],
    p_shards     smallint[],
    p_created    timestamptz[],
    p_expires    timestamptz[],
    p_epochs     bigint[],
    p_sale_slots smallint[],
    p_keys       text[]
) RETURNS text[]
LANGUAGE plpgsql AS $$
DECLARE
    n          int := coalesce(cardinality(p_ids), 0);
    answers    text[] := array_fill(NULL::text, ARRAY[coalesce(cardinality(p_ids), 0)]);
    v_sale     text;
    v_item     text;
    v_locked   boolean := false; -- the current item's row is locked and read
    v_found    boolean := false; -- ... and exists
    v_quantity bigint;
    v_sold     bigint;           -- its sold count, with this call's orders of it
    v_epoch    bigint;
    v_added    bigint := 0;      -- orders of it this call placed, not yet in its row
    v_dup      boolean;
BEGIN
    IF coalesce(cardinality(p_sales), 0) <> n OR coalesce(cardinality(p_items), 0) <> n
       OR coalesce(cardinality(p_users), 0) <> n OR coalesce(cardinality(p_slots), 0) <> n
       OR coalesce(cardinality(p_shards), 0) <> n OR coalesce(cardinality(p_created), 0) <> n
       OR coalesce(cardinality(p_expires), 0) <> n OR coalesce(cardinality(p_epochs), 0) <> n
       OR coalesce(cardinality(p_sale_slots), 0) <> n OR coalesce(cardinality(p_keys), 0) <> n THEN
        RAISE EXCEPTION 'place_orders: the arrays must have one element an order (% orders)', n;
    END IF;
    FOR i IN 1..n LOOP
        IF i = 1 OR p_sales[i] IS DISTINCT FROM v_sale OR p_items[i] IS DISTINCT FROM v_item THEN
            IF v_added > 0 THEN
                UPDATE sale_items SET sold = sold + v_added WHERE sale_id = v_sale AND id = v_item;
            END IF;
            v_sale := p_sales[i];
            v_item := p_items[i];
            v_locked := false;
            v_added := 0;
        END IF;

        -- Redelivery is the common retry: answer it without touching the item row. Once the row
        -- is locked, this check is made under the lock: an order of this id placed by a
        -- concurrent consumer that held the lock first has committed by now.
        PERFORM 1 FROM orders WHERE id = p_ids[i];
        v_dup := FOUND;
        IF NOT v_dup AND NOT v_locked THEN
            SELECT quantity, sold, epoch INTO v_quantity, v_sold, v_epoch
              FROM sale_items WHERE sale_id = v_sale AND id = v_item
               FOR UPDATE;
            v_found := FOUND;
            v_locked := true;
            PERFORM 1 FROM orders WHERE id = p_ids[i];
            v_dup := FOUND;
        END IF;
        IF v_dup THEN
            IF p_keys[i] IS NOT NULL THEN
                UPDATE orders SET idem_key = p_keys[i] WHERE id = p_ids[i] AND idem_key IS NULL;
            END IF;
            answers[i] := 'duplicate';
            CONTINUE;
        END IF;
        IF NOT v_found THEN
            answers[i] := 'unknown_item';
            CONTINUE;
        END IF;
        IF p_epochs[i] < v_epoch THEN
            answers[i] := 'stale';
            CONTINUE;
        END IF;
        IF v_sold >= v_quantity THEN
            answers[i] := 'oversold';
            CONTINUE;
        END IF;
        PERFORM 1 FROM orders
         WHERE sale_id = v_sale AND item_id = v_item AND user_id = p_users[i] AND slot = p_slots[i]
           AND status IN ('PENDING', 'PAID');
        IF FOUND THEN
            answers[i] := 'limit';
            CONTINUE;
        END IF;
        -- The per-sale limit's net, as in place_order: the partial unique index refuses what two
        -- consumers place at once in the same per-sale slot, and the retry answers here.
        IF p_sale_slots[i] IS NOT NULL THEN
            PERFORM 1 FROM orders
             WHERE sale_id = v_sale AND user_id = p_users[i] AND sale_slot = p_sale_slots[i]
               AND status IN ('PENDING', 'PAID');
            IF FOUND THEN
                answers[i] := 'sale_limit';
                CONTINUE;
            END IF;
        END IF;

        INSERT INTO orders (id, sale_id, item_id, user_id, slot, shard, status, created_at, expires_at, sale_slot, idem_key)
        VALUES (p_ids[i], v_sale, v_item, p_users[i], p_slots[i], p_shards[i], 'PENDING', p_created[i], p_expires[i],
                p_sale_slots[i], p_keys[i]);
        v_sold := v_sold + 1;
        v_added := v_added + 1;
        answers[i] := 'placed';
    END LOOP;
    IF v_added > 0 THEN
        UPDATE sale_items SET sold = sold + v_added WHERE sale_id = v_sale AND id = v_item;
    END IF;
    RETURN answers;
END;
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION place_orders(uuid[], text[], text[], text[], smallint[], smallint[], timestamptz[], timestamptz[], bigint[], smallint[], text[]);
