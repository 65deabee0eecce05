-- reserve: THE atomic step of the purchase path on one shard of an item, for one purchase attempt or
-- several (all keys share the shard's hash tag; the buyer's home shard holds everything about the
-- buyer for the item). The attempts are taken in order, each as if it ran alone: a later one sees
-- what an earlier one wrote (the same buyer twice, the same Idempotency-Key twice, the last unit).
-- The store's batcher sends the reserves of one shard that meet in a pipeline as one call
-- (stock/merge.go), so the script's call, the sale's settings and the clock are paid once for all.
-- KEYS: 1 meta (hash), 2 stock (int), 3 buyers (hash user -> slot bitmask), 4 holds (zset order -> expiry ms),
--       5 orders (hash order -> "user\nslot\nidemKey", plus "\nsaleSlot" when the order holds a
--         per-sale claim), 6 applied (set of the transfer ids moved into this shard),
--       then for each attempt: the idempotency record of (user, Idempotency-Key), and, when ARGV[4]
--         is set, the order reference of its candidate order id (stock.OrderRefKey), written with
--         the hold so that no order ever exists without it; given only where that key shares the
--         node of the shard's slot (one Redis), else the caller writes it next
-- ARGV: 1 idempotency record TTL in ms, 2 incoming transfer id ('' for none), 3 units of the
--       incoming transfer, 4 the order references' TTL in ms ('' when the caller writes them),
--       then for each attempt: user id, candidate order id, sharded (0/1), Idempotency-Key, the
--       per-sale claim slot the attempt holds (claim.lua; '' when the sale has no per-sale limit),
--       and, when ARGV[4] is set, its order reference's value
-- Returns one answer per attempt, in their order, each "code|orderId|expiresAtMs|slot|replay|epoch"
-- (one string: one bulk reply is cheaper to read than six), epoch (the generation of the shard's
-- state, which a rebuild bumps; '0' before any) only with RESERVED, fresh or replayed; codes:
-- RESERVED, SOLD_OUT, ALREADY_PURCHASED, NOT_STARTED, PAUSED, NOT_FOUND, and EMPTY (only when
-- sharded: this shard has no stock, the caller may borrow from another shard and call again;
-- nothing is remembered). Only final answers are remembered under the idempotency key; NOT_STARTED
-- and PAUSED are transient, so a retry with the same key may still buy.

-- The incoming transfer is applied first and whatever the answers: its units left their shard in the
-- same step that wrote the ledger entry, and the caller deletes that entry after this call, so they
-- must be in this counter by then. SADD makes the move exactly once (a repair may have applied it).
if ARGV[2] ~= '' and redis.call('SADD', KEYS[6], ARGV[2]) == 1 then
  redis.call('INCRBY', KEYS[2], ARGV[3])
end

-- Nothing below writes the settings, and a script runs alone: they, the clock and the counter are
-- read once, when the first attempt needs them.
local meta = redis.call('HMGET', KEYS[1], 'opens_at_ms', 'paused', 'limit', 'hold_ttl_ms', 'epoch')
local epoch = meta[5] or '0'
local now, stock

local function attempt(idem, ref, user, order, sharded, idemKey, saleSlot, refValue)
  local prior = redis.call('GET', idem)
  if prior then
    -- The record is "code|orderId|expiresAtMs|slot", the answer's first four fields.
    return prior .. '|1|' .. epoch
  end
  if not meta[1] then
    return 'NOT_FOUND||||0|'
  end
  if meta[2] == '1' then
    return 'PAUSED||||0|'
  end
  if not now then
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  if now < tonumber(meta[1]) then
    return 'NOT_STARTED||||0|'
  end

  -- Per-user limit: the buyer record is a bitmask of occupied slots; the lowest free slot is taken so
  -- PostgreSQL's partial unique index over (item, user, slot) can back the limit up.
  local limit = tonumber(meta[3])
  local mask = tonumber(redis.call('HGET', KEYS[3], user) or '0')
  local slot = -1
  for i = 0, limit - 1 do
    if bit.band(mask, bit.lshift(1, i)) == 0 then
      slot = i
      break
    end
  end
  if slot < 0 then
    redis.call('SET', idem, 'ALREADY_PURCHASED|||', 'PX', ARGV[1])
    return 'ALREADY_PURCHASED||||0|'
  end

  if not stock then
    stock = tonumber(redis.call('GET', KEYS[2]) or '0')
  end
  if stock <= 0 then
    if sharded == '1' then
      return 'EMPTY||||0|'
    end
    redis.call('SET', idem, 'SOLD_OUT|||', 'PX', ARGV[1])
    return 'SOLD_OUT||||0|'
  end

  -- An attempt's writes come together, the counter's first, as when each attempt was a call of its own.
  stock = stock - 1
  redis.call('DECR', KEYS[2])
  redis.call('HSET', KEYS[3], user, bit.bor(mask, bit.lshift(1, slot)))
  local exp = now + tonumber(meta[4])
  redis.call('ZADD', KEYS[4], exp, order)
  local rec = user .. '\n' .. slot .. '\n' .. idemKey
  if saleSlot ~= '' then
    rec = rec .. '\n' .. saleSlot
  end
  redis.call('HSET', KEYS[5], order, rec)
  redis.call('SET', idem, 'RESERVED|' .. order .. '|' .. exp .. '|' .. slot, 'PX', ARGV[1])
  if ref then
    redis.call('SET', ref, refValue, 'PX', ARGV[4])
  end
  return 'RESERVED|' .. order .. '|' .. exp .. '|' .. slot .. '|0|' .. epoch
end

local perKeys, perArgs = 1, 5
if ARGV[4] ~= '' then
  perKeys, perArgs = 2, 6
end
local answers = {}
for i = 1, (#KEYS - 6) / perKeys do
  local k, a = 6 + (i - 1) * perKeys, 4 + (i - 1) * perArgs
  local ref
  if perKeys == 2 then
    ref = KEYS[k + 2]
  end
  answers[i] = attempt(KEYS[k + 1], ref, ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4], ARGV[a + 5], ARGV[a + 6])
end
return answers
