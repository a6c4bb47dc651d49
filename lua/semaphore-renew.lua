-- Renew one holder's lease (the watchdog, batched with the locks' renewals).
-- KEYS[1]  semaphore hash (see semaphore-acquire.lua)
-- KEYS[2]  holder leases (sorted set permit id -> lease deadline, server clock)
-- ARGV[1]  lease in ms (a fraction is rounded up: PEXPIRE takes whole ms)
-- ARGV[2]  permit id
-- Returns  1 when renewed, 0 when the holder no longer holds its permits (its lease had ended: they
--          may be someone else's now)
local semKey = KEYS[1]
local leasesKey = KEYS[2]
local leaseMs = math.ceil(tonumber(ARGV[1]))
local permitId = ARGV[2]

-- #include server-clock
local deadline = tonumber(redis.call('zscore', leasesKey, permitId))
if not deadline or deadline <= now or redis.call('hexists', semKey, 'o:' .. permitId) == 0 then
  return 0
end
redis.call('zadd', leasesKey, now + leaseMs, permitId)
if redis.call('pttl', semKey) < leaseMs then
  redis.call('pexpire', semKey, leaseMs)
  redis.call('pexpire', leasesKey, leaseMs)
end
return 1
