-- reserve: ONE atomic step of the purchase path for one item (all keys share the item's hash tag).
-- KEYS: 1 meta (hash), 2 stock (int), 3 buyers (hash user -> slot bitmask), 4 holds (zset order -> expiry ms),
--       5 orders (hash order -> "user\nslot"), 6 idempotency record of (user, Idempotency-Key)
-- ARGV: 1 user id, 2 candidate order id, 3 idempotency record TTL in ms
-- Returns {code, orderId, expiresAtMs, slot, replay} as strings; codes: RESERVED, SOLD_OUT,
-- ALREADY_PURCHASED, NOT_STARTED, PAUSED, NOT_FOUND. Only final answers are remembered under the
-- idempotency key; NOT_STARTED and PAUSED are transient, so a retry with the same key may still buy.
local prior = redis.call('GET', KEYS[6])
if prior then
  local code, oid, exp, slot = string.match(prior, '^([%u_]+)|([^|]*)|([^|]*)|([^|]*)$')
  return {code, oid, exp, slot, '1'}
end

local meta = redis.call('HMGET', KEYS[1], 'opens_at_ms', 'paused', 'limit', 'hold_ttl_ms')
if not meta[1] then
  return {'NOT_FOUND', '', '', '', '0'}
end
if meta[2] == '1' then
  return {'PAUSED', '', '', '', '0'}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if now < tonumber(meta[1]) then
  return {'NOT_STARTED', '', '', '', '0'}
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
  return {'ALREADY_PURCHASED', '', '', '', '0'}
end

local stock = tonumber(redis.call('GET', KEYS[2]) or '0')
if stock <= 0 then
  redis.call('SET', KEYS[6], 'SOLD_OUT|||', 'PX', ARGV[3])
  return {'SOLD_OUT', '', '', '', '0'}
end

redis.call('DECR', KEYS[2])
redis.call('HSET', KEYS[3], ARGV[1], bit.bor(mask, bit.lshift(1, slot)))
local exp = now + tonumber(meta[4])
redis.call('ZADD', KEYS[4], exp, ARGV[2])
redis.call('HSET', KEYS[5], ARGV[2], ARGV[1] .. '\n' .. slot)
redis.call('SET', KEYS[6], 'RESERVED|' .. ARGV[2] .. '|' .. exp .. '|' .. slot, 'PX', ARGV[3])
return {'RESERVED', ARGV[2], tostring(exp), tostring(slot), '0'}
