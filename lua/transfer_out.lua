-- transfer_out: take up to N units out of one shard on their way to another, writing a ledger entry
-- in the same atomic step, so the units are always either in this counter or in the ledger until the
-- target shard applies them.
-- KEYS: 1 stock, 2 ledger (hash transferId -> "toShard\ncount\nms"), 3 transfer sequence (int)
-- ARGV: 1 most units to take, 2 target shard, 3 this shard (prefix of the transfer id)
-- Returns {count, transferId} as strings; {'0', ''} when the shard has nothing to give.
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
if cur <= 0 then
  return {'0', ''}
end
local n = math.min(cur, tonumber(ARGV[1]))
redis.call('DECRBY', KEYS[1], n)
local id = ARGV[3] .. '.' .. redis.call('INCR', KEYS[3])
local t = redis.call('TIME')
local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[2], id, ARGV[2] .. '\n' .. n .. '\n' .. ms)
return {tostring(n), id}
