-- place_orders: a consumer's whole batch in one call, with the same answer for each order as
-- place_order gives (00010): 'placed', 'duplicate', 'unknown_item', 'stale', 'oversold', 'limit' or
-- 'sale_limit', in the order of the arrays. place_order, called once an order, took the item's row
-- lock and updated its sold count for every order, so the 500 orders of a batch for one hot item
-- left 500 versions of that one row in the transaction, and every later lock, update and foreign
-- key check of the batch walked them: about 105 µs of PostgreSQL's CPU an order on the 2-core box
-- (BenchmarkPlaceBatch), a fifth of the box's CPU in a 50,000 -> 10,000 burst. Here each run of orders for one item locks
-- the row once (at its first order that is not a redelivery, as place_order did), decides every
-- order against the table and against the orders of the run placed before it, and at the end of
-- the run writes the run's placed orders in one insert, with their buyer's Idempotency-Key (00011),
-- and adds them to sold in one update.
--
-- The arrays are parallel, one element an order, sorted by (sale, item) by the caller so that
-- concurrent batches take item row locks in the same order. p_sale_slots and p_keys hold NULL for
-- none. A redelivered order keeps a key it was placed without (as PlaceBatch's update did before).
-- place_order is kept as it was; fsctl no longer calls it.

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
    v_sold     bigint;           -- its sold count, with the run's placed orders
    v_epoch    bigint;
    v_dup      boolean;
    v_at       int;
    -- The run's placed orders, written at its end: their places in the arrays, their ids, and
    -- their buyers' per-user and per-sale slots ("user" LF "slot").
    run        int[] := '{}';
    run_ids    uuid[] := '{}';
    run_slots  text[] := '{}';
    run_sale   text[] := '{}';
BEGIN
    IF coalesce(cardinality(p_sales), 0) <> n OR coalesce(cardinality(p_items), 0) <> n
       OR coalesce(cardinality(p_users), 0) <> n OR coalesce(cardinality(p_slots), 0) <> n
       OR coalesce(cardinality(p_shards), 0) <> n OR coalesce(cardinality(p_created), 0) <> n
       OR coalesce(cardinality(p_expires), 0) <> n OR coalesce(cardinality(p_epochs), 0) <> n
       OR coalesce(cardinality(p_sale_slots), 0) <> n OR coalesce(cardinality(p_keys), 0) <> n THEN
        RAISE EXCEPTION 'place_orders: the arrays must have one element an order (% orders)', n;
    END IF;
    FOR i IN 1..n + 1 LOOP
        IF i > n OR i = 1 OR p_sales[i] IS DISTINCT FROM v_sale OR p_items[i] IS DISTINCT FROM v_item THEN
            IF cardinality(run) > 0 THEN
                INSERT INTO orders (id, sale_id, item_id, user_id, slot, shard, status, created_at, expires_at, sale_slot, idem_key)
                SELECT p_ids[k], v_sale, v_item, p_users[k], p_slots[k], p_shards[k], 'PENDING', p_created[k], p_expires[k],
                       p_sale_slots[k], p_keys[k]
                  FROM unnest(run) AS k;
                UPDATE sale_items SET sold = sold + cardinality(run) WHERE sale_id = v_sale AND id = v_item;
            END IF;
            EXIT WHEN i > n;
            v_sale := p_sales[i];
            v_item := p_items[i];
            v_locked := false;
            run := '{}';
            run_ids := '{}';
            run_slots := '{}';
            run_sale := '{}';
        END IF;

        -- Redelivery is the common retry: answer it without touching the item row. Once the row
        -- is locked, the table is read under the lock: an order of this id placed by a concurrent
        -- consumer that held the lock first has committed by now.
        v_at := array_position(run_ids, p_ids[i]);
        IF v_at IS NOT NULL THEN
            -- The same order twice in the call: the first is placed, this one is a redelivery.
            IF p_keys[run[v_at]] IS NULL THEN
                p_keys[run[v_at]] := p_keys[i];
            END IF;
            answers[i] := 'duplicate';
            CONTINUE;
        END IF;
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
        IF (p_users[i] || E'\n' || p_slots[i]) = ANY(run_slots) THEN
            answers[i] := 'limit';
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
            IF (p_users[i] || E'\n' || p_sale_slots[i]) = ANY(run_sale) THEN
                answers[i] := 'sale_limit';
                CONTINUE;
            END IF;
            PERFORM 1 FROM orders
             WHERE sale_id = v_sale AND user_id = p_users[i] AND sale_slot = p_sale_slots[i]
               AND status IN ('PENDING', 'PAID');
            IF FOUND THEN
                answers[i] := 'sale_limit';
                CONTINUE;
            END IF;
            run_sale := run_sale || (p_users[i] || E'\n' || p_sale_slots[i]);
        END IF;

        run := run || i;
        run_ids := run_ids || p_ids[i];
        run_slots := run_slots || (p_users[i] || E'\n' || p_slots[i]);
        v_sold := v_sold + 1;
        answers[i] := 'placed';
    END LOOP;
    RETURN answers;
END;
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION place_orders(uuid[], text[], text[], text[], smallint[], smallint[], timestamptz[], timestamptz[], bigint[], smallint[], text[]);
