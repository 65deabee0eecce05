-- preload: write one shard's sale settings and make its stock counter match its share of the quantity.
-- KEYS: 1 meta, 2 stock
-- ARGV: 1 opens_at_ms, 2 paused (0/1), 3 per-user limit, 4 hold TTL ms, 5 this shard's quantity,
--       6 the stock to load when the counter does not exist yet, 7 the item's shard count,
--       8 the item's epoch (PostgreSQL's; reservations carry it into their OrderPlaced)
-- Returns 'loaded' (the counter was created), 'kept' (it existed and the quantity is unchanged) or
-- 'adjusted:<delta>' (the quantity changed: the counter moved by the same amount, atomically, so a
-- live counter is never overwritten and units held or sold stay accounted for). A quantity lowered
-- below what is already held or sold is refused and nothing changes, and so is a change of the shard
-- count of a live item: buyers' home shards would move away from their buyer records.
local cur = redis.call('GET', KEYS[2])
local oldq = redis.call('HGET', KEYS[1], 'quantity')
local olds = tonumber(redis.call('HGET', KEYS[1], 'shards') or '1')
if cur and olds ~= tonumber(ARGV[7]) then
  return redis.error_reply('SHARDS_CHANGED the item has ' .. olds .. ' shards in Redis and ' .. ARGV[7] ..
    ' in the sale; reset the item first')
end
local result = 'kept'
if not cur then
  redis.call('SET', KEYS[2], ARGV[6])
  result = 'loaded'
elseif oldq and tonumber(oldq) ~= tonumber(ARGV[5]) then
  local delta = tonumber(ARGV[5]) - tonumber(oldq)
  if tonumber(cur) + delta < 0 then
    return redis.error_reply('QUANTITY_BELOW_TAKEN quantity ' .. ARGV[5] .. ' is below the ' ..
      (tonumber(oldq) - tonumber(cur)) .. ' units already held or sold')
  end
  redis.call('INCRBY', KEYS[2], delta)
  result = 'adjusted:' .. delta
end
redis.call('HSET', KEYS[1], 'opens_at_ms', ARGV[1], 'paused', ARGV[2], 'limit', ARGV[3],
  'hold_ttl_ms', ARGV[4], 'quantity', ARGV[5], 'shards', ARGV[7], 'epoch', ARGV[8])
return result
