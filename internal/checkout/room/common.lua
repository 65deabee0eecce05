-- common: what every room script shares. Go prepends this file to each script, so the key order,
-- the clock and the liveness rules cannot drift apart between join, poll, tick and revoke.
-- KEYS (every room script): 1 meta, 2 users, 3 tickets, 4 queue, 5 seen, 6 active, 7 ended
local meta, users, tickets, queue, seen, active, ended = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]

-- now_ms reads Redis TIME, so every server instance sharing the room agrees on one clock.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- int writes a whole number exactly: tostring keeps only 14 digits, and order scores reach 2^52 + n.
local function int(x)
  return string.format('%.0f', x)
end

-- settings returns what join and poll need of meta, or nil when the sale has no room.
local function settings()
  local m = redis.call('HMGET', meta, 'opens_at_ms', 'fair', 'waiter_ttl_ms', 'active_ttl_ms', 'rate')
  if not m[1] then
    return nil
  end
  return {opens = tonumber(m[1]), fair = m[2], waiter_ttl = tonumber(m[3]), active_ttl = tonumber(m[4]), rate = m[5]}
end

-- forget_user lets the ticket's user join again with a new ticket, unless they already have one.
local function forget_user(ticket)
  local user = redis.call('HGET', tickets, ticket)
  if user and redis.call('HGET', users, user) == ticket then
    redis.call('HDEL', users, user)
  end
end

-- entomb marks expired tickets: their tickets entries stay behind as tombstones, so a holder's next
-- poll says "expired" rather than "not found", until the tick deletes them (ended).
local function entomb(now, list)
  for _, t in ipairs(list) do
    redis.call('ZADD', ended, int(now), t)
  end
end

-- expire takes a ticket's place or slot away and leaves its tombstone.
local function expire(ticket, now)
  redis.call('ZREM', queue, ticket)
  redis.call('ZREM', seen, ticket)
  redis.call('ZREM', active, ticket)
  forget_user(ticket)
  entomb(now, {ticket})
  redis.call('HINCRBY', meta, 'expired_total', 1)
end

-- answer is what join and poll return: ticket, status, position, depth, lease expiry ms, rate.
local function answer(ticket, status, position, lease, s)
  return {ticket, status, position, redis.call('ZCARD', queue), lease, s.rate}
end

-- touch refreshes a ticket's liveness and says where it stands; a ticket whose holder stopped
-- polling expires here, whether or not a tick has dropped it yet.
local function touch(ticket, now, s)
  local lease = redis.call('ZSCORE', active, ticket)
  if lease then
    if tonumber(lease) < now then
      expire(ticket, now)
      return answer(ticket, 'expired', 0, 0, s)
    end
    lease = now + s.active_ttl
    redis.call('ZADD', active, 'XX', int(lease), ticket)
    return answer(ticket, 'admitted', 0, lease, s)
  end
  local last = redis.call('ZSCORE', seen, ticket)
  if not last then
    return answer(ticket, 'expired', 0, 0, s)
  end
  if tonumber(last) < now - s.waiter_ttl then
    expire(ticket, now)
    return answer(ticket, 'expired', 0, 0, s)
  end
  redis.call('ZADD', seen, int(now), ticket)
  if s.fair == 'random' and now < s.opens then
    -- The early joiners' order is not decided until the opening; a position would leak it.
    return answer(ticket, 'prequeue', 0, 0, s)
  end
  return answer(ticket, 'waiting', redis.call('ZRANK', queue, ticket) + 1, 0, s)
end

