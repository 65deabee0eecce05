-- reserve: ONE atomic step of the purchase path on one shard of an item (all keys share the shard's
-- hash tag; the buyer's home shard holds everything about the buyer for the item).
-- KEYS: 1 meta (hash), 2 stock (int), 3 buyers (hash user -> slot bitmask), 4 holds (zset order -> expiry ms),
--       5 orders (hash order -> "user\nslot\nidemKey", plus "\nsaleSlot" when the order holds a
--         per-sale claim), 6 idempotency record of (user, Idempotency-Key),
--       7 applied (set of the transfer ids moved into this shard),
--       8 (optional) the order reference of the candidate order id (stock.OrderRefKey), written with
--         the hold so that no order ever exists without it; given only where that key shares the
--         node of the shard's slot (one Redis), else the caller writes it next
-- ARGV: 1 user id, 2 candidate order id, 3 idempotency record TTL in ms, 4 sharded (0/1),
--       5 Idempotency-Key, 6 incoming transfer id ('' for none), 7 units of the incoming transfer,
--       8 the per-sale claim slot the attempt holds (claim.lua; '' when the sale has no per-sale
--       limit), 9 the order reference's value, 10 its TTL in ms (both only with KEYS[8])
-- Returns "code|orderId|expiresAtMs|slot|replay|epoch", one string (one bulk reply is cheaper to read
-- than six), epoch (the generation of the shard's state, which a rebuild bumps; '0' before any)
-- only with RESERVED, fresh or replayed; codes: RESERVED, SOLD_OUT,
-- ALREADY_PURCHASED, NOT_STARTED, PAUSED, NOT_FOUND, and EMPTY (only when sharded: this shard has no
-- stock, the caller may borrow from another shard and call again; nothing is remembered). Only final
-- answers are remembered under the idempotency key; NOT_STARTED and PAUSED are transient, so a retry
-- with the same key may still buy.

-- The incoming transfer is applied first and whatever the answer: its units left their shard in the
-- same step that wrote the ledger entry, and the caller deletes that entry after this call, so they
-- must be in this counter by then. SADD makes the move exactly once (a repair may have applied it).
if ARGV[6] ~= '' and redis.call('SADD', KEYS[7], ARGV[6]) == 1 then
  redis.call('INCRBY', KEYS[2], ARGV[7])
end

local prior = redis.call('GET', KEYS[6])
if prior then
  -- The record is "code|orderId|expiresAtMs|slot", the answer's first four fields.
  return prior .. '|1|' .. (redis.call('HGET', KEYS[1], 'epoch') or '0')
end

local meta = redis.call('HMGET', KEYS[1], 'opens_at_ms', 'paused', 'limit', 'hold_ttl_ms', 'epoch')
if not meta[1] then
  return 'NOT_FOUND||||0|'
end
if meta[2] == '1' then
  return 'PAUSED||||0|'
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if now < tonumber(meta[1]) then
  return 'NOT_STARTED||||0|'
end

-- Per-user limit: the buyer record is a bitmask of occupied slots; the lowest free slot is taken so
-- PostgreSQL's partial unique index over (item, user, slot) can back the limit up.
local limit = tonumber(meta[3])
local mask = tonumber(redis.call('HGET', KEYS[3], ARGV[1]) or '0')
local slot = -1
for i = 0, limit - 1 do
  if bit.band(mask, bit.lshift(1, i)) == 0 then
    slot = i
    break
  end
end
if slot < 0 then
  redis.call('SET', KEYS[6], 'ALREADY_PURCHASED|||', 'PX', ARGV[3])
  return 'ALREADY_PURCHASED||||0|'
end

local stock = tonumber(redis.call('GET', KEYS[2]) or '0')
if stock <= 0 then
  if ARGV[4] == '1' then
    return 'EMPTY||||0|'
  end
  redis.call('SET', KEYS[6], 'SOLD_OUT|||', 'PX', ARGV[3])
  return 'SOLD_OUT||||0|'
end

redis.call('DECR', KEYS[2])
redis.call('HSET', KEYS[3], ARGV[1], bit.bor(mask, bit.lshift(1, slot)))
local exp = now + tonumber(meta[4])
redis.call('ZADD', KEYS[4], exp, ARGV[2])
local rec = ARGV[1] .. '\n' .. slot .. '\n' .. ARGV[5]
if ARGV[8] ~= '' then
  rec = rec .. '\n' .. ARGV[8]
end
redis.call('HSET', KEYS[5], ARGV[2], rec)
redis.call('SET', KEYS[6], 'RESERVED|' .. ARGV[2] .. '|' .. exp .. '|' .. slot, 'PX', ARGV[3])
if KEYS[8] then
  redis.call('SET', KEYS[8], ARGV[9], 'PX', ARGV[10])
end
return 'RESERVED|' .. ARGV[2] .. '|' .. exp .. '|' .. slot .. '|0|' .. (meta[5] or '0')
