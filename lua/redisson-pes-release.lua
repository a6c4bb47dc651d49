-- Give permits back in Redisson's layout: RPermitExpirableSemaphore's release of one id, or of
-- several ids at once (docs/redisson-interop.md#semaphores), each with that script's effects.
-- KEYS[1]  N: string, the permits available
-- KEYS[2]  redisson_sc:{N}: channel
-- KEYS[3]  {N}:timeout: sorted set permit id -> deadline (epoch ms, the holder's clock)
-- ARGV[1]  now (epoch ms, this host's clock)
-- ARGV[2]  publish command: 'PUBLISH' or 'SPUBLISH'
-- ARGV[3..]  the permit ids (16 raw bytes each)
-- Returns  one id: 1 when it was leased and its deadline had not passed; 0 when it was leased but
--          past its deadline (given back all the same, as Redisson does); -1 when it was not
--          leased (nothing written).
--          Several ids: how many were given back; 0 when any of them was not leased or past its
--          deadline (then nothing is given back by this call, as Redisson refuses the batch).
--          An error reply 'LOCKNAMECONFLICT ...' (nothing written) when N is no permit counter or
--          {N}:timeout no sorted set (redisson-pes-guard)
local semKey = KEYS[1]
local channel = KEYS[2]
local timeoutKey = KEYS[3]
local now = ARGV[1]
local publishCommand = ARGV[2]
local firstId = 3

-- #include redisson-pes-guard
if pesConflict then
  return pesConflict
end

if #ARGV == firstId then
  local permitId = ARGV[firstId]
  local deadline = redis.call('zscore', timeoutKey, permitId)
  if redis.call('zrem', timeoutKey, permitId) ~= 1 then
    return -1
  end
  local available = redis.call('incrby', semKey, 1)
  redis.call(publishCommand, channel, available)
  if tonumber(deadline) <= tonumber(now) then
    return 0
  end
  return 1
end

for i = firstId, #ARGV do
  local deadline = redis.call('zscore', timeoutKey, ARGV[i])
  if deadline == false or tonumber(deadline) <= tonumber(now) then
    return 0
  end
end
local reclaimLimit = -1
-- #include redisson-pes-reclaim
local ids = {}
for i = firstId, #ARGV do
  table.insert(ids, ARGV[i])
end
local removed = redis.call('zrem', timeoutKey, unpack(ids))
redis.call('incrby', semKey, removed)
redis.call(publishCommand, channel, removed)
return removed
