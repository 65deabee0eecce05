-- join: give a user their ticket; an existing live one keeps its place, otherwise a new one goes to
-- the back of the queue, or in the random pre-queue to the random place ARGV[3] drew.
-- ARGV: 1 user, 2 a fresh ticket id, 3 pre-queue score (a whole number below 2^52)
-- Returns common's answer, or {'', 'noroom'} / {'', 'collision'} (the fresh id is taken: draw again).
local s = settings()
if not s then
  return {'', 'noroom'}
end
local now = now_ms()
local cur = redis.call('HGET', users, ARGV[1])
if cur then
  local a = touch(cur, now, s)
  if a[2] ~= 'expired' then
    return a
  end
end
local ticket = ARGV[2]
if redis.call('HSETNX', tickets, ticket, ARGV[1]) == 0 then
  return {'', 'collision'}
end
local score
if s.fair == 'random' and now < s.opens then
  score = ARGV[3]
else
  -- Everyone placed by arrival sorts after every pre-queue score (< 2^52); 2^52 + n stays exact.
  score = int(4503599627370496 + redis.call('HINCRBY', meta, 'seq', 1))
end
redis.call('ZADD', queue, score, ticket)
redis.call('ZADD', seen, int(now), ticket)
redis.call('HSET', users, ARGV[1], ticket)
return touch(ticket, now, s)
