-- release: return the unit of one live, unpaid hold to stock exactly once.
-- KEYS: 1 stock, 2 buyers, 3 holds, 4 orders, 5 final-status marker of the order, 6 its handed-off
--       mark (confirm.lua), 7 (optional) an idempotency record the caller asks to forget
-- ARGV: 1 order id, 2 final status for the marker (FAILED, EXPIRED, CANCELLED), 3 marker TTL in ms,
--       4 the shard's idempotency key prefix ("<tag>:idem:"), 5 '1': not when the order was handed
--       off (a hand-off that failed while another attempt of the same purchase confirmed it: that
--       buyer was told RESERVED)
-- Returns {1, user, saleSlot} when this call released the unit (saleSlot '' unless the order held a
-- per-sale claim, which the caller then gives back: it lives on another key, claim.lua), {0, '', ''}
-- when there was no live hold: released before, settled (paid: the unit is sold and stays with the
-- buyer), or never reserved.
-- An idempotency record is forgotten only while it still names this order, so a buyer whose purchase
-- failed can retry with the same key. A FAILED order also forgets the record its reserve wrote (its
-- key is in the orders entry): a failed order was never really the buyer's, so the retry must be a
-- fresh attempt. That record shares the shard's hash tag, so building its name here stays in the slot.
if ARGV[5] == '1' and redis.call('EXISTS', KEYS[6]) == 1 then
  return {0, '', ''}
end
if redis.call('ZREM', KEYS[3], ARGV[1]) == 0 then
  return {0, '', ''}
end
local rec = redis.call('HGET', KEYS[4], ARGV[1])
redis.call('INCR', KEYS[1])
redis.call('SET', KEYS[5], ARGV[2], 'PX', ARGV[3])
if not rec then
  return {1, '', ''}
end
redis.call('HDEL', KEYS[4], ARGV[1])
-- "user\nslot\nidemKey\nsaleSlot", "user\nslot\nidemKey", or "user\nslot" as written before the
-- key was recorded.
local user, slot, key, saleSlot = string.match(rec, '^([^\n]*)\n(%d+)\n([^\n]*)\n(%d+)$')
if not user then
  user, slot, key = string.match(rec, '^([^\n]*)\n(%d+)\n([^\n]*)$')
end
if not user then
  user, slot = string.match(rec, '^([^\n]*)\n(%d+)$')
end
local mask = tonumber(redis.call('HGET', KEYS[2], user) or '0')
mask = bit.band(mask, bit.bnot(bit.lshift(1, tonumber(slot))))
if mask == 0 then
  redis.call('HDEL', KEYS[2], user)
else
  redis.call('HSET', KEYS[2], user, mask)
end

local function forget(idem)
  local cur = redis.call('GET', idem)
  if cur and string.find(cur, '|' .. ARGV[1] .. '|', 1, true) then
    redis.call('DEL', idem)
  end
end
if KEYS[7] then
  forget(KEYS[7])
end
if key and ARGV[2] == 'FAILED' then
  forget(ARGV[4] .. #user .. ':' .. user .. ':' .. key)
end
return {1, user, saleSlot or ''}
