-- Redisson's reclaim step of RPermitExpirableSemaphore (docs/redisson-interop.md#semaphores): permit
-- ids whose deadline has passed (their holder died or stopped renewing) leave the lease zset and
-- their permits go back to the counter; the new count is published when it is above 0.
-- Expects  semKey, timeoutKey, channel, now (ms, the caller's clock, as Redisson), publishCommand,
--          reclaimLimit (at most this many ids; -1: all)
-- Defines  nothing
do
  local expiredIds = redis.call('zrangebyscore', timeoutKey, 0, now, 'limit', 0, reclaimLimit)
  if #expiredIds > 0 then
    redis.call('zrem', timeoutKey, unpack(expiredIds))
    local available = redis.call('incrby', semKey, #expiredIds)
    if tonumber(available) > 0 then
      redis.call(publishCommand, channel, available)
    end
  end
end
