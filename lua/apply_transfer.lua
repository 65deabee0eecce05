-- apply_transfer: move a ledger entry's units into its target shard exactly once (the repair path;
-- reserve applies transfers the same way).
-- KEYS: 1 applied (set of transfer ids moved into this shard), 2 stock
-- ARGV: 1 transfer id, 2 units
-- Returns the units this call added: ARGV[2], or 0 when the transfer was applied before.
if redis.call('SADD', KEYS[1], ARGV[1]) == 1 then
  redis.call('INCRBY', KEYS[2], ARGV[2])
  return tonumber(ARGV[2])
end
return 0
