-- place_orders, the limits decided by the insert: 00012's place_orders asked PostgreSQL, for each
-- order, whether its buyer already held a live order in the slot, a query the partial unique index
-- of live slots answers in one probe. But PostgreSQL picks that index by its statistics, and a
-- rehearsed sale leaves the trap: the index bloated by orders that expired (its pages stay), and
-- statistics taken when hardly any order was live. PostgreSQL then answered each order's check
-- through the index of the item's orders, reading every live order of the item for every order:
-- quadratic, 1,500,000 index entries to place 2,000 orders (TestPlaceBatchReadsFewRowsWhateverThePlan),
-- and the consumer of a 50,000 -> 10,000 burst 5-7 s behind the last answer with PostgreSQL at five
-- times its CPU (docs/benchmarks.md, the twelfth part). A join reading the run's buyers' slots once
-- fell into the same trap the other way round.
--
-- Here the unique indexes decide, with no plan to choose: PostgreSQL checks an insert against its
-- ON CONFLICT arbiters directly. Each run is decided as 00012 decided it but for the table's
-- slots, and its placed orders inserted in one statement, ON CONFLICT DO NOTHING (every unique
-- index: the live slots of the per-user and of the per-sale limit). When every one goes in (the
-- rule: Redis gave each buyer free slots), the run is done, at 00012's cost. When one finds a slot
-- taken by a live order of the table, the run's decisions may rest on it (a unit it seemed to take,
-- a per-sale slot it seemed to hold): its rows are deleted and the run decided again order by
-- order, each inserted at once ON CONFLICT DO NOTHING and refused when a slot stops it. Every
-- answer is 00012's, in its order of checks: a refused order asks whether its per-user slot is
-- taken ('limit', checked first in 00012) or else its per-sale one ('sale_limit'), a probe only
-- for refused orders. The Down migration restores 00012's body.

-- +goose Up
-- +goose StatementBegin
-- limit_or_sale_limit is the refusal of an order a live order's slot stops: 'limit' when the buyer
-- holds its per-user slot of the item (checked first, as 00012 did), else 'sale_limit'. Only
-- refused orders ask, never the run's placed ones.
CREATE FUNCTION limit_or_sale_limit(p_sale text, p_item text, p_user text, p_slot smallint) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN EXISTS (
        SELECT 1 FROM orders
         WHERE sale_id = p_sale AND item_id = p_item AND user_id = p_user AND slot = p_slot
           AND status IN ('PENDING', 'PAID')) THEN 'limit' ELSE 'sale_limit' END
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION place_orders(
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
    answers    text[] := array_fill(NULL::text, ARRAY[n]);
    v_sale     text;
    v_item     text;
    v_first    int := 1;         -- the current run's first and last orders
    v_last     int;
    v_exact    boolean;          -- deciding the run again, each order inserted as it is placed
    v_locked   boolean;          -- the current item's row is locked and read
    v_found    boolean := false; -- ... and exists
    v_quantity bigint;
    v_sold0    bigint;           -- its sold count, as read under the lock
    v_sold     bigint;           -- ... with the run's placed orders
    v_epoch    bigint;
    v_dup      boolean;
    v_at       int;
    v_in       int;
    -- The run's placed orders: their places in the arrays, their ids, and their buyers' per-user
    -- and per-sale slots ("user" LF "slot").
    run        int[];
    run_ids    uuid[];
    run_slots  text[];
    run_sale   text[];
BEGIN
    IF coalesce(cardinality(p_sales), 0) <> n OR coalesce(cardinality(p_items), 0) <> n
       OR coalesce(cardinality(p_users), 0) <> n OR coalesce(cardinality(p_slots), 0) <> n
       OR coalesce(cardinality(p_shards), 0) <> n OR coalesce(cardinality(p_created), 0) <> n
       OR coalesce(cardinality(p_expires), 0) <> n OR coalesce(cardinality(p_epochs), 0) <> n
       OR coalesce(cardinality(p_sale_slots), 0) <> n OR coalesce(cardinality(p_keys), 0) <> n THEN
        RAISE EXCEPTION 'place_orders: the arrays must have one element an order (% orders)', n;
    END IF;
    WHILE v_first <= n LOOP
        v_sale := p_sales[v_first];
        v_item := p_items[v_first];
        v_last := v_first;
        WHILE v_last < n AND p_sales[v_last + 1] IS NOT DISTINCT FROM v_sale
              AND p_items[v_last + 1] IS NOT DISTINCT FROM v_item LOOP
            v_last := v_last + 1;
        END LOOP;
        v_locked := false;
        v_exact := false;
        LOOP
            run := '{}';
            run_ids := '{}';
            run_slots := '{}';
            run_sale := '{}';
            v_sold := v_sold0;
            FOR i IN v_first..v_last LOOP
                -- Redelivery is the common retry: answer it without touching the item row. Once
                -- the row is locked, the table is read under the lock: an order of this id placed
                -- by a concurrent consumer that held the lock first has committed by now.
                v_at := array_position(run_ids, p_ids[i]);
                IF v_at IS NOT NULL THEN
                    -- The same order twice in the call: the first is placed, this one is a redelivery
                    -- that keeps its key for the first when the first has none (inserted already when
                    -- deciding again).
                    IF v_exact THEN
                        IF p_keys[i] IS NOT NULL THEN
                            UPDATE orders SET idem_key = p_keys[i] WHERE id = p_ids[i] AND idem_key IS NULL;
                        END IF;
                    ELSIF p_keys[run[v_at]] IS NULL THEN
                        p_keys[run[v_at]] := p_keys[i];
                    END IF;
                    answers[i] := 'duplicate';
                    CONTINUE;
                END IF;
                PERFORM 1 FROM orders WHERE id = p_ids[i];
                v_dup := FOUND;
                IF NOT v_dup AND NOT v_locked THEN
                    SELECT quantity, sold, epoch INTO v_quantity, v_sold0, v_epoch
                      FROM sale_items WHERE sale_id = v_sale AND id = v_item
                       FOR UPDATE;
                    v_found := FOUND;
                    v_locked := true;
                    v_sold := v_sold0;
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
                -- A slot of the per-sale limit taken in the run; one taken in the table stops the
                -- insert below. The per-user limit comes first, as in 00012.
                IF p_sale_slots[i] IS NOT NULL AND (p_users[i] || E'\n' || p_sale_slots[i]) = ANY(run_sale) THEN
                    answers[i] := limit_or_sale_limit(v_sale, v_item, p_users[i], p_slots[i]);
                    CONTINUE;
                END IF;
                IF v_exact THEN
                    INSERT INTO orders (id, sale_id, item_id, user_id, slot, shard, status, created_at, expires_at, sale_slot, idem_key)
                    VALUES (p_ids[i], v_sale, v_item, p_users[i], p_slots[i], p_shards[i], 'PENDING', p_created[i],
                            p_expires[i], p_sale_slots[i], p_keys[i])
                    ON CONFLICT DO NOTHING;
                    IF NOT FOUND THEN
                        -- A slot taken, or (only if another item's consumer placed an order of this
                        -- id since the check above) the id: a duplicate, as 00012 answered an id found.
                        PERFORM 1 FROM orders WHERE id = p_ids[i];
                        answers[i] := CASE WHEN FOUND THEN 'duplicate'
                                           ELSE limit_or_sale_limit(v_sale, v_item, p_users[i], p_slots[i]) END;
                        CONTINUE;
                    END IF;
                END IF;
                IF p_sale_slots[i] IS NOT NULL THEN
                    run_sale := run_sale || (p_users[i] || E'\n' || p_sale_slots[i]);
                END IF;
                run := run || i;
                run_ids := run_ids || p_ids[i];
                run_slots := run_slots || (p_users[i] || E'\n' || p_slots[i]);
                v_sold := v_sold + 1;
                answers[i] := 'placed';
            END LOOP;
            EXIT WHEN v_exact OR cardinality(run) = 0;
            WITH placed AS (
                INSERT INTO orders (id, sale_id, item_id, user_id, slot, shard, status, created_at, expires_at, sale_slot, idem_key)
                SELECT p_ids[k], v_sale, v_item, p_users[k], p_slots[k], p_shards[k], 'PENDING', p_created[k], p_expires[k],
                       p_sale_slots[k], p_keys[k]
                  FROM unnest(run) AS k
                ON CONFLICT DO NOTHING
                RETURNING 1)
            SELECT count(*) INTO v_in FROM placed;
            EXIT WHEN v_in = cardinality(run);
            -- A slot was taken in the table: decide the run again, order by order.
            DELETE FROM orders WHERE id IN (SELECT unnest(run_ids));
            v_exact := true;
        END LOOP;
        IF cardinality(run) > 0 THEN
            UPDATE sale_items SET sold = sold + cardinality(run) WHERE sale_id = v_sale AND id = v_item;
        END IF;
        v_first := v_last + 1;
    END LOOP;
    RETURN answers;
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DROP FUNCTION limit_or_sale_limit(text, text, text, smallint);
-- +goose StatementEnd
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION place_orders(
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

