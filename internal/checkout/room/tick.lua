-- tick: one admission round. Drops waiters who stopped polling and admitted buyers whose lease ran
-- out, then moves buyers from the head of the queue into active, paced by a token bucket whose
-- refill is computed from the time since the last round (meta last_ms), so any number of instances
-- may tick at any frequency and the rate still holds.
-- ARGV: 1 the most waiters, leases, admissions and tombstones one round handles (keeps the script
--       short), 2 how long an expired ticket's tombstone is kept in ms
-- Returns {admitted, depth, active, expired waiters, expired leases}, or {-1} when there is no room.
local m = redis.call('HMGET', meta, 'opens_at_ms', 'rate', 'max_active', 'waiter_ttl_ms', 'active_ttl_ms',
  'paused', 'allowance', 'last_ms')
if not m[1] then
  return {-1}
end
local opens, rate, max_active = tonumber(m[1]), tonumber(m[2]), tonumber(m[3])
local waiter_ttl, active_ttl = tonumber(m[4]), tonumber(m[5])
local bound = tonumber(ARGV[1])
local now = now_ms()

local stale = redis.call('ZRANGEBYSCORE', seen, '-inf', '(' .. int(now - waiter_ttl), 'LIMIT', 0, bound)
for _, t in ipairs(stale) do
  forget_user(t)
end
local lapsed = redis.call('ZRANGEBYSCORE', active, '-inf', '(' .. int(now), 'LIMIT', 0, bound)
for _, t in ipairs(lapsed) do
  forget_user(t)
end
if #stale > 0 then
  redis.call('ZREM', queue, unpack(stale))
  redis.call('ZREM', seen, unpack(stale))
end
if #lapsed > 0 then
  redis.call('ZREM', active, unpack(lapsed))
end
if #stale + #lapsed > 0 then
  redis.call('HINCRBY', meta, 'expired_total', #stale + #lapsed)
end
entomb(now, stale)
entomb(now, lapsed)
local gone = redis.call('ZRANGEBYSCORE', ended, '-inf', '(' .. int(now - tonumber(ARGV[2])), 'LIMIT', 0, bound)
if #gone > 0 then
  redis.call('HDEL', tickets, unpack(gone))
  redis.call('ZREM', ended, unpack(gone))
end

local admitted = 0
if m[6] == '1' or now < opens then
  -- Nothing may be saved up while paused or before the opening, or the first round after would
  -- release a flood.
  redis.call('HSET', meta, 'allowance', '0', 'last_ms', int(now))
else
  local last = math.max(tonumber(m[8]) or now, opens)
  -- The burst cap (one second's worth) keeps a gap in ticking from releasing a flood either.
  local allowance = math.min(math.max(1, rate), (tonumber(m[7]) or 0) + math.max(0, now - last) * rate / 1000)
  local n = math.min(math.floor(allowance), bound, redis.call('ZCARD', queue))
  if max_active > 0 then
    n = math.min(n, max_active - redis.call('ZCARD', active))
  end
  if n > 0 then
    local popped = redis.call('ZPOPMIN', queue, n)
    local lease = int(now + active_ttl)
    for i = 1, #popped, 2 do
      redis.call('ZREM', seen, popped[i])
      redis.call('ZADD', active, lease, popped[i])
      admitted = admitted + 1
    end
    redis.call('HINCRBY', meta, 'admitted_total', admitted)
  end
  redis.call('HSET', meta, 'allowance', string.format('%.17g', allowance - admitted), 'last_ms', int(now))
end
return {admitted, redis.call('ZCARD', queue), redis.call('ZCARD', active), #stale, #lapsed}
