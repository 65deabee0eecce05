-- Reserve one unit of an item for one user, atomically.
-- KEYS[1] = {item:<id>}:stock   (string integer: units left)
-- KEYS[2] = {item:<id>}:buyers  (set of user ids who bought)
-- ARGV[1] = user id
-- Returns the new stock (>= 0) on success, -1 already purchased, -2 sold out, -3 not preheated.
if redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 1 then
  return -1
end
local stock = redis.call('GET', KEYS[1])
if not stock then
  return -3
end
if tonumber(stock) <= 0 then
  return -2
end
local left = redis.call('DECR', KEYS[1])
redis.call('SADD', KEYS[2], ARGV[1])
return left
