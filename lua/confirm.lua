-- confirm: the last step of a hand-off, after Kafka acknowledged the order's OrderPlaced and before
-- the buyer hears RESERVED. The order must still be live on the state it was reserved on: the shard
-- loaded with the same epoch (a rebuild has not replaced it) and the order still in its orders hash
-- (not released). Then it is marked handed off, so a concurrent attempt of the same purchase whose
-- own hand-off failed does not release it (release.lua, with its unless-handed flag). An order that
-- has already ended as EXPIRED or CANCELLED (a replay of an old key) is confirmed too: those end in
-- PostgreSQL first, so it is recorded, and its buyer hears the answer the key was given.
-- KEYS: 1 meta, 2 orders, 3 the order's handed-off mark, 4 the order's final-status marker
-- ARGV: 1 the reservation's epoch, 2 order id, 3 the mark's TTL in ms
-- Returns 1 when confirmed, 0 when the buyer must not be told RESERVED.
local m = redis.call('HMGET', KEYS[1], 'opens_at_ms', 'epoch')
if not m[1] or (m[2] or '0') ~= ARGV[1] then
  return 0
end
if redis.call('HEXISTS', KEYS[2], ARGV[2]) == 1 then
  redis.call('SET', KEYS[3], '1', 'PX', ARGV[3])
  return 1
end
local ended = redis.call('GET', KEYS[4])
if ended == 'EXPIRED' or ended == 'CANCELLED' or ended == 'PAID' then
  return 1
end
return 0
