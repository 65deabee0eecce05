-- claim: take one of a buyer's per-sale slots for one purchase attempt, before the item's reserve.
-- A sale's items live on different hash tags (on a Redis Cluster, different masters), so the
-- per-sale limit cannot be checked inside the reserve script; it is a claim on a key of its own,
-- taken first, undone when the reserve does not reserve, and given back when the order's hold is
-- released. A claim names the order that holds it from the start (the attempt's candidate order
-- id), so a claim whose order is not live in the item's shard is a leak the sweeper can see.
-- KEYS: 1 the claims bucket of the buyer (stock.ClaimKey)
-- ARGV: 1 the buyer's field in the bucket (length-prefixed user id), 2 the sale's per-sale limit,
--       3 item id, 4 Idempotency-Key, 5 candidate order id
-- The buyer's field holds one line per claim: "slot item idemKey orderId ms" (ids are slugs, keys
-- printable ASCII without spaces, ms the claim's Redis time).
-- Returns {'NEW', slot, orderId} (claimed now, for the candidate), {'HAVE', slot, orderId} (the same
-- attempt, item and key, claimed before: a retry) or {'FULL', '', ''} (the limit is reached).
local cur = redis.call('HGET', KEYS[1], ARGV[1]) or ''
local used = {}
local n = 0
for line in string.gmatch(cur, '[^\n]+') do
  local slot, item, key, oid = string.match(line, '^(%d+) (%S+) (%S+) (%S+) %d+$')
  if slot then
    if item == ARGV[3] and key == ARGV[4] then
      return {'HAVE', slot, oid}
    end
    used[tonumber(slot)] = true
    n = n + 1
  end
end
local limit = tonumber(ARGV[2])
if n >= limit then
  return {'FULL', '', ''}
end
local slot = 0
while used[slot] do
  slot = slot + 1
end
if slot >= limit then
  return {'FULL', '', ''}
end
local t = redis.call('TIME')
local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local line = slot .. ' ' .. ARGV[3] .. ' ' .. ARGV[4] .. ' ' .. ARGV[5] .. ' ' .. ms
if cur ~= '' then
  line = cur .. '\n' .. line
end
redis.call('HSET', KEYS[1], ARGV[1], line)
return {'NEW', tostring(slot), ARGV[5]}
