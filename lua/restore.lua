-- restore: put one order PostgreSQL knows back into a shard's Redis state (reconcile --fix and
-- --rebuild-redis): its orders entry, its slot in the buyer record, and, for a PENDING order, its hold.
-- KEYS: 1 stock, 2 buyers, 3 holds, 4 orders
-- ARGV: 1 order id, 2 user id, 3 slot, 4 idempotency key (may be ''), 5 hold expiry in ms ('' for a
--       paid order: no hold), 6 take a unit out of stock (1/0: 0 when the stock was loaded as
--       quantity - sold, which already counts this order), 7 (optional) the per-sale claim slot the
--       order holds (orders.sale_slot), kept in its orders entry so its release gives the claim back
--       8 and 9 (with KEYS[5]) the idempotency record's TTL in ms and the hold's expiry in ms the
--       buyer was first told
-- KEYS[5] (optional): the idempotency record of (user, the order's key): written as the RESERVED
-- the buyer heard, unless a record is there, so a replay of the key after Redis was lost and
-- rebuilt hears the same answer.
-- Returns 1 restored, 0 already there (nothing changed), -1 slot taken by another order of the
-- user, -2 no unit left to take.
if KEYS[5] then
  redis.call('SET', KEYS[5], 'RESERVED|' .. ARGV[1] .. '|' .. ARGV[9] .. '|' .. ARGV[3], 'PX', ARGV[8], 'NX')
end
if redis.call('HEXISTS', KEYS[4], ARGV[1]) == 1 then
  if ARGV[5] ~= '' then
    -- The record is there; a lost hold alone comes back (its unit never left the order).
    if redis.call('ZADD', KEYS[3], 'NX', ARGV[5], ARGV[1]) == 1 then
      return 1
    end
  end
  return 0
end
local slot = tonumber(ARGV[3])
local mask = tonumber(redis.call('HGET', KEYS[2], ARGV[2]) or '0')
if bit.band(mask, bit.lshift(1, slot)) ~= 0 then
  return -1
end
if ARGV[6] == '1' then
  if tonumber(redis.call('GET', KEYS[1]) or '0') <= 0 then
    return -2
  end
  redis.call('DECR', KEYS[1])
end
redis.call('HSET', KEYS[2], ARGV[2], bit.bor(mask, bit.lshift(1, slot)))
local rec = ARGV[2] .. '\n' .. slot .. '\n' .. ARGV[4]
if ARGV[7] and ARGV[7] ~= '' then
  rec = rec .. '\n' .. ARGV[7]
end
redis.call('HSET', KEYS[4], ARGV[1], rec)
if ARGV[5] ~= '' then
  redis.call('ZADD', KEYS[3], ARGV[5], ARGV[1])
end
return 1
