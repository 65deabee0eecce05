-- settings: write a room's settings, keeping its queue, admitted set and counters.
-- ARGV: 1 '1' to create the room when missing ('0': answer 0 instead), then the new values, '' for
-- those left as they are: 2 opens_at_ms, 3 rate, 4 max_active, 5 fair, 6 waiter_ttl_ms,
-- 7 active_ttl_ms, 8 paused ('1' or '0'), 9 revision of the settings ('' or '0': not checked)
-- Returns 1; 0 when the room does not exist and ARGV[1] did not ask to create it; 2 when the room
-- holds settings of a later revision (nothing is written: they are older than what is live).
local existed = redis.call('HEXISTS', meta, 'opens_at_ms') == 1
if not existed and ARGV[1] ~= '1' then
  return 0
end
local rev = tonumber(ARGV[9]) or 0
if rev > 0 then
  if rev < (tonumber(redis.call('HGET', meta, 'revision')) or 0) then
    return 2
  end
  redis.call('HSET', meta, 'revision', ARGV[9])
end
local now = int(now_ms())
local was_paused = redis.call('HGET', meta, 'paused')
local fields = {'opens_at_ms', 'rate', 'max_active', 'fair', 'waiter_ttl_ms', 'active_ttl_ms', 'paused'}
for i, f in ipairs(fields) do
  if ARGV[i + 1] ~= '' then
    redis.call('HSET', meta, f, ARGV[i + 1])
  end
end
if not existed or redis.call('HGET', meta, 'paused') ~= was_paused then
  -- A pause or a resume starts the bucket empty: nothing saved up before it counts after it.
  redis.call('HSET', meta, 'allowance', '0', 'last_ms', now)
end
local burst = math.max(1, tonumber(redis.call('HGET', meta, 'rate')))
if (tonumber(redis.call('HGET', meta, 'allowance')) or 0) > burst then
  redis.call('HSET', meta, 'allowance', string.format('%.17g', burst))
end
return 1
