-- revoke: free an admitted buyer's slot (or a waiter's place) at once and forget the ticket.
-- ARGV: 1 ticket id
-- Returns 1 when the ticket held a slot or a place, 0 when it was unknown or had expired already.
local user = redis.call('HGET', tickets, ARGV[1])
if not user then
  return 0
end
local live = redis.call('ZREM', active, ARGV[1]) + redis.call('ZREM', queue, ARGV[1])
redis.call('ZREM', seen, ARGV[1])
forget_user(ARGV[1])
redis.call('HDEL', tickets, ARGV[1])
redis.call('ZREM', ended, ARGV[1])
if live > 0 then
  return 1
end
return 0
