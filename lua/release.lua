-- release: return one hold's unit to stock exactly once.
-- KEYS: 1 stock, 2 buyers, 3 holds, 4 orders, 5 released marker of the order,
--       6 (optional) the idempotency record that answered with this order
-- ARGV: 1 order id, 2 final status for the marker (FAILED, EXPIRED, CANCELLED), 3 marker TTL in ms
-- Returns 1 when this call released the unit, 0 when the hold was already gone (released before,
-- or never reserved). The idempotency record is forgotten only while it still names this order, so
-- a buyer whose purchase failed before it was acknowledged can retry with the same key.
local rec = redis.call('HGET', KEYS[4], ARGV[1])
if not rec then
  return 0
end
local user, slot = string.match(rec, '^(.*)\n(%d+)$')
redis.call('HDEL', KEYS[4], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
local mask = tonumber(redis.call('HGET', KEYS[2], user) or '0')
mask = bit.band(mask, bit.bnot(bit.lshift(1, tonumber(slot))))
if mask == 0 then
  redis.call('HDEL', KEYS[2], user)
else
  redis.call('HSET', KEYS[2], user, mask)
end
redis.call('INCR', KEYS[1])
redis.call('SET', KEYS[5], ARGV[2], 'PX', ARGV[3])
if KEYS[6] then
  local cur = redis.call('GET', KEYS[6])
  if cur and string.find(cur, '|' .. ARGV[1] .. '|', 1, true) then
    redis.call('DEL', KEYS[6])
  end
end
return 1
