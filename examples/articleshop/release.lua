-- Undo one reservation when the order could not be published.
-- KEYS[1] = {item:<id>}:stock, KEYS[2] = {item:<id>}:buyers, ARGV[1] = user id
-- Stock is only given back when the user was really in the buyers set, so a repeated
-- compensation cannot create units out of thin air. Returns the new stock, or -1 if nothing was undone.
if redis.call('SREM', KEYS[2], ARGV[1]) == 1 then
  return redis.call('INCR', KEYS[1])
end
return -1
