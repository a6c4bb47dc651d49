-- Keep (or refresh) one wait-for record beside a held lock: the holder's call chain waits for
-- another lock (docs/deadlocks.md#across-processes-after-deadlockcheckafter).
-- KEYS[1]  the held lock's wait-for records: hash '<owner id> <wait id>' ->
--          '<deadline ms> <wait start ms> <record>' (both on the server clock; a record past its
--          deadline is ignored and dropped)
-- ARGV[1]  field: '<owner id of the hold> <wait id>'
-- ARGV[2]  record: what the wait waits for, written by the waiting process (opaque here)
-- ARGV[3]  how long the record lives unless refreshed, in ms
-- ARGV[4]  the wait's start on the server clock, ms; '' when not known yet: then now - ARGV[5]
-- ARGV[5]  how long the wait has lasted, ms (when ARGV[4] is '')
-- Returns  the wait's start on the server clock, ms (as digits)
local recordsKey = KEYS[1]
local field = ARGV[1]
local record = ARGV[2]
local lifeMs = tonumber(ARGV[3])

-- #include server-clock

local start = tonumber(ARGV[4]) or (now - tonumber(ARGV[5]))
-- Whole ms as digits, whatever the Lua's number type prints like.
local function digits(ms)
  return string.format('%.0f', math.floor(ms))
end
redis.call('hset', recordsKey, field, digits(now + lifeMs) .. ' ' .. digits(start) .. ' ' .. record)
if redis.call('pttl', recordsKey) < lifeMs then
  redis.call('pexpire', recordsKey, lifeMs)
end
-- Records of waits that ended without deleting theirs (a crashed process) go once past their deadline.
if redis.call('hlen', recordsKey) > 8 then
  local all = redis.call('hgetall', recordsKey)
  for i = 1, #all, 2 do
    local deadline = tonumber(string.match(all[i + 1], '^(%d+) '))
    if not deadline or deadline <= now then
      redis.call('hdel', recordsKey, all[i])
    end
  end
end
return digits(start)
