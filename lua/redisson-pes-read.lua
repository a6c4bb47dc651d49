-- Read a semaphore in Redisson's layout without writing (availablePermits, inspect).
-- KEYS[1]  N: string, the permits available
-- KEYS[2]  {N}:timeout: sorted set permit id (16 raw bytes) -> deadline (epoch ms, holders' clocks)
-- ARGV[1]  now (epoch ms, this host's clock): deadlines at or before it count as available (the
--          next script that reclaims gives them back)
-- Returns  {available or false (N missing), leased ids not yet past their deadline,
--           {id as 32 lowercase hex, deadline, ...} of every leased id, server time in ms}
local semKey = KEYS[1]
local timeoutKey = KEYS[2]
local now = tonumber(ARGV[1])

local stored = redis.call('get', semKey)
local leased = redis.call('zrange', timeoutKey, 0, -1, 'WITHSCORES')
local holders = {}
local live = 0
local expired = 0
for i = 1, #leased, 2 do
  local hex = string.gsub(leased[i], '.', function(byte) return string.format('%02x', string.byte(byte)) end)
  table.insert(holders, hex)
  table.insert(holders, leased[i + 1])
  if tonumber(leased[i + 1]) <= now then expired = expired + 1 else live = live + 1 end
end
local time = redis.call('time')
local available = false
if stored ~= false then available = tonumber(stored) + expired end
return { available, live, holders, tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000) }
