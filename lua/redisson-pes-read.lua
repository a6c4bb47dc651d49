-- Read a semaphore in Redisson's layout without writing (availablePermits, inspect).
-- KEYS[1]  N: string, the permits available
-- KEYS[2]  {N}:timeout: sorted set permit id (16 raw bytes) -> deadline (epoch ms, holders' clocks)
-- ARGV[1]  now (epoch ms, this host's clock): deadlines at or before it count as available (the
--          next script that reclaims gives them back)
-- ARGV[2]  '1': counts only (availablePermits: two ZCOUNTs, whatever the number of leases)
-- Returns  {available or false (N missing), leased ids not yet past their deadline,
--           {id as 32 lowercase hex, deadline, ...} of every leased id ({} with counts only),
--           server time in ms}; an error reply 'LOCKNAMECONFLICT ...' when N is no permit counter
--          or {N}:timeout no sorted set (redisson-pes-guard)
local semKey = KEYS[1]
local timeoutKey = KEYS[2]
local now = tonumber(ARGV[1])

local countsOnly = ARGV[2] == '1'

-- #include redisson-pes-guard
if pesConflict then
  return pesConflict
end
local holders = {}
local expired = redis.call('zcount', timeoutKey, '-inf', now)
local live = redis.call('zcount', timeoutKey, '(' .. now, '+inf')
if not countsOnly then
  local leased = redis.call('zrange', timeoutKey, 0, -1, 'WITHSCORES')
  for i = 1, #leased, 2 do
    local id = leased[i]
    -- One format per 16-byte id (a gsub calling format per byte costs ten times as much).
    local hex = #id == 16 and string.format(string.rep('%02x', 16), string.byte(id, 1, 16))
      or string.gsub(id, '.', function(byte) return string.format('%02x', string.byte(byte)) end)
    holders[#holders + 1] = hex
    holders[#holders + 1] = leased[i + 1]
  end
end
local time = redis.call('time')
local available = false
if stored ~= false then available = tonumber(stored) + expired end
return { available, live, holders, tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000) }
