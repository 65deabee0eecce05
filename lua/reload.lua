-- reload: rebuild one shard from PostgreSQL's numbers in ONE atomic step. Everything Redis holds for
-- the shard — counter, holds, buyer records, orders, transfer ledger and applied transfers — is
-- dropped, and the counter set to the shard's share of quantity − sold. Unlike preload it never keeps
-- a counter it finds: a rebuild trusts nothing Redis had, and a release or a transfer that raced the
-- wipe before it may have written part of the old state back. reconcile then restores every order
-- PostgreSQL counts live on top of it.
-- KEYS: 1 meta, 2 stock, 3 buyers, 4 holds, 5 orders, 6 ledger, 7 applied
-- ARGV: 1 opens_at_ms, 2 paused (0/1), 3 per-user limit, 4 hold TTL ms, 5 this shard's quantity,
--       6 this shard's stock, 7 the item's shard count, 8 the item's epoch (PostgreSQL's)
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7])
redis.call('SET', KEYS[2], ARGV[6])
redis.call('HSET', KEYS[1], 'opens_at_ms', ARGV[1], 'paused', ARGV[2], 'limit', ARGV[3],
  'hold_ttl_ms', ARGV[4], 'quantity', ARGV[5], 'shards', ARGV[7], 'epoch', ARGV[8])
return 'reloaded'
