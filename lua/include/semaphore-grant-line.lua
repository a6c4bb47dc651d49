-- Permits are free (released, given back, or back by expiry): grant them to the waiters at the
-- head of the line whose requests fit, in line order, stopping at the first that does not (strict
-- FIFO), inside this script, and tell each it holds them (`granted:<permit id> <token> <send stamp of
-- its last attempt> <ms since that attempt> <grant lease ms>`, see grant-timing). Nobody can take them between the release and the wake-up, so a
-- holder that releases and asks again in a loop cannot starve a waiter in another process, and a
-- hand-off costs one trip. The grant's lease is short (the waiter's lease, at most the waiter
-- timeout): a waiter that died before its wake-up blocks the others no longer than that; it makes
-- it its full lease once it hears of the grant. A waiter of an older version (no lease stored with
-- it) is only woken by name (`ids:`) and tries by itself; its permits stay reserved for it.
-- skipId: a caller that has its answer (granted, or it does not fit) is never granted here; ''
-- when there is none.
-- Expects  semKey, leasesKey, lineKey, deadlinesKey, fenceKey, fenceMemoryMs, channel,
--          publishCommand, grantCapMs (the waiter timeout), skipId, time, now
-- Defines  nothing

do
  local limit = tonumber(redis.call('hget', semKey, 'permits'))
  local available = limit and (limit - (tonumber(redis.call('hget', semKey, 'used')) or 0)) or 0
  local woken = {}
  if available > 0 then
    for _, id in ipairs(redis.call('lrange', lineKey, 0, available - 1)) do
      if id == skipId then break end
      local want = tonumber(redis.call('hget', semKey, 'w:' .. id)) or 1
      -- A tombstone (no deadline: it left or was granted) or a waiter whose deadline passed takes
      -- nothing and is granted nothing (semaphore-line-head pops it once it stands first).
      local waitsUntil = tonumber(redis.call('zscore', deadlinesKey, id))
      if not waitsUntil or waitsUntil <= now then want = 0 end
      if want > available then break end
      available = available - want
      local lease = want > 0 and tonumber(redis.call('hget', semKey, 'l:' .. id))
      if want == 0 then
        -- Gone: nothing to grant or wake.
      elseif lease then
        local seenRecord = redis.call('hget', semKey, 's:' .. id)
        redis.call('lrem', lineKey, 1, id)
        redis.call('zrem', deadlinesKey, id)
        redis.call('hdel', semKey, 'w:' .. id, 'l:' .. id, 's:' .. id)
        local grantMs = math.max(1, math.min(lease, tonumber(grantCapMs)))
        -- #include fence-token
        redis.call('hset', semKey, 'o:' .. id, want, 'f:' .. id, tokenText)
        redis.call('hincrby', semKey, 'used', want)
        redis.call('zadd', leasesKey, now + grantMs, id)
        -- #include grant-timing
        -- On the waiter's process's channel (its permit id is an owner id, '<client id>:<n>'): a
        -- grant wakes only that process.
        local waiterChannel = channel .. ':' .. (string.match(id, '^(.*):%d+$') or id)
        redis.call(publishCommand, waiterChannel, 'granted:' .. id .. ' ' .. tokenText .. ' ' .. grantTiming .. ' ' .. grantMs)
      else
        woken[#woken + 1] = id
      end
    end
  end
  if #woken > 0 then
    redis.call(publishCommand, channel, 'ids:' .. table.concat(woken, ' '))
  end
end
