-- Read a semaphore's state without changing it (inspect, availablePermits).
-- KEYS[1]  semaphore hash (see semaphore-acquire.lua)
-- KEYS[2]  holder leases (sorted set permit id -> lease deadline, server clock)
-- KEYS[3]  waiting line (list of permit ids)
-- KEYS[4]  waiter deadlines (sorted set permit id -> deadline, server clock)
-- ARGV[1]  '1' to list holders and waiters; '0' for the counts only
-- ARGV[2]  the most waiters to list, first in line first (optional; absent or 0: every one)
-- Returns  {limit (0 when the semaphore is not in use), permits held by live holders,
--          {permit id, permits, remaining lease ms, fencing token, ...},
--          {permit id, permits asked for, ...} of live waiters in line order (at most ARGV[2]),
--          now (ms, server clock), live waiters in all (0 unless ARGV[1] is '1')}; a holder's
--          permits were granted when its token was taken (see fence-token)
local semKey = KEYS[1]
local leasesKey = KEYS[2]
local lineKey = KEYS[3]
local deadlinesKey = KEYS[4]
local detailed = ARGV[1] == '1'
local waiterLimit = tonumber(ARGV[2]) or 0

-- #include server-clock
local limit = tonumber(redis.call('hget', semKey, 'permits')) or 0
local used = tonumber(redis.call('hget', semKey, 'used')) or 0
-- Holders whose lease ended hold nothing any more, even before a script gives their permits back.
for _, id in ipairs(redis.call('zrangebyscore', leasesKey, '-inf', now)) do
  used = used - (tonumber(redis.call('hget', semKey, 'o:' .. id)) or 0)
end
local holders = {}
local waiters = {}
local waiterCount = 0
if detailed then
  local leases = redis.call('zrangebyscore', leasesKey, '(' .. now, '+inf', 'withscores')
  for i = 1, #leases, 2 do
    local id = leases[i]
    holders[#holders + 1] = id
    holders[#holders + 1] = tonumber(redis.call('hget', semKey, 'o:' .. id)) or 0
    holders[#holders + 1] = tonumber(leases[i + 1]) - now
    holders[#holders + 1] = redis.call('hget', semKey, 'f:' .. id) or '0'
  end
  -- #include inspect-line
  waiterCount = lineCount
  for _, id in ipairs(lineEntries) do
    waiters[#waiters + 1] = id
    waiters[#waiters + 1] = tonumber(redis.call('hget', semKey, 'w:' .. id)) or 1
  end
end
return { limit, used, holders, waiters, now, waiterCount }
