-- unclaim: give back (or re-point) the per-sale claim an order holds (claim.lua).
-- KEYS: 1 the claims bucket of the buyer
-- ARGV: 1 the buyer's field, 2 the order id the claim names, 3 '' to give the claim back, or the
--       order id it is to name instead (the reserve replayed an earlier reservation of the same
--       attempt under another id)
-- Returns 1 when a claim of that order was changed, 0 when there was none (given back before, or
-- never taken): giving back twice is harmless.
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if not cur then
  return 0
end
local out = {}
local hit = 0
for line in string.gmatch(cur, '[^\n]+') do
  local head, oid, ms = string.match(line, '^(%d+ %S+ %S+) (%S+) (%d+)$')
  if oid == ARGV[2] and hit == 0 then
    hit = 1
    if ARGV[3] ~= '' then
      out[#out + 1] = head .. ' ' .. ARGV[3] .. ' ' .. ms
    end
  else
    out[#out + 1] = line
  end
end
if hit == 0 then
  return 0
end
if #out == 0 then
  redis.call('HDEL', KEYS[1], ARGV[1])
else
  redis.call('HSET', KEYS[1], ARGV[1], table.concat(out, '\n'))
end
return 1
