-- Renew the lease of one acquisition's permits in Redisson's layout: RPermitExpirableSemaphore's
-- updateLeaseTime for each id (docs/redisson-interop.md#semaphores).
-- KEYS[1]  N: string, the permits available
-- KEYS[2]  {N}:timeout: sorted set permit id -> deadline (epoch ms, the holder's clock)
-- KEYS[3]  redisson_sc:{N}: channel
-- ARGV[1]  the new deadline (epoch ms, this host's clock)
-- ARGV[2]  now (epoch ms, this host's clock)
-- ARGV[3]  publish command: 'PUBLISH' or 'SPUBLISH'
-- ARGV[4]  '1': set the deadline exactly; '0': only move it later (a renewal never shortens a lease)
-- ARGV[5..]  the permit ids (16 raw bytes each)
-- Returns  1 when every id was still leased (their deadlines set), 0 when any was not (no deadline
--          written: those permits were reclaimed, they may be someone else's now); an error reply
--          'LOCKNAMECONFLICT ...' (nothing written) when N is no permit counter or {N}:timeout no
--          sorted set (redisson-pes-guard)
local semKey = KEYS[1]
local timeoutKey = KEYS[2]
local channel = KEYS[3]
local deadline = tonumber(ARGV[1])
local now = ARGV[2]
local publishCommand = ARGV[3]
local exact = ARGV[4] == '1'
local firstId = 5

-- #include redisson-pes-guard
if pesConflict then
  return pesConflict
end

local reclaimLimit = -1
-- #include redisson-pes-reclaim

local current = {}
for i = firstId, #ARGV do
  local score = redis.call('zscore', timeoutKey, ARGV[i])
  if score == false then
    return 0
  end
  current[i] = tonumber(score)
end
for i = firstId, #ARGV do
  if exact or current[i] < deadline then
    redis.call('zadd', timeoutKey, deadline, ARGV[i])
  end
end
return 1
