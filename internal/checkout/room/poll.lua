-- poll: refresh a ticket's liveness and say where it stands.
-- ARGV: 1 ticket id, 2 user
-- Returns common's answer, or {'', 'noroom'} / {'', 'notfound'} (unknown, or another user's ticket:
-- the two look the same so nobody can probe for tickets).
local s = settings()
if not s then
  return {'', 'noroom'}
end
if redis.call('HGET', tickets, ARGV[1]) ~= ARGV[2] then
  return {'', 'notfound'}
end
return touch(ARGV[1], now_ms(), s)
