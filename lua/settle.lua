-- settle: the order was paid. Its hold stops expiring; the unit stays sold to the buyer.
-- KEYS: 1 holds, 2 final-status marker of the order
-- ARGV: 1 order id, 2 marker TTL in ms
-- Returns 1 when this call settled the order, 0 when it had no live hold (settled before, released,
-- or never reserved). The orders entry and the buyer's slot stay: they are the sold unit, counted
-- against the per-user limit; stock does not move.
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then
  return 0
end
redis.call('SET', KEYS[2], 'PAID', 'PX', ARGV[2])
return 1
