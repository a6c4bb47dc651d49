-- After a grant, the first live waiter in line of another process than the grantee's is told how
-- long the grant lease runs (`next:<entry> <ms>` on its process's channel): it sleeps no longer
-- than that. If the grantee's process died without taking the lock, that waiter attempts when the
-- grant lease ends, and the failed grantee's entries are skipped together (line-failed-grantee),
-- instead of everyone sleeping out the lease they were told last. A fair waiter needs no notice
-- (it heartbeats within the grant lease). Bounded: only the first 64 entries are looked at; when
-- they all belong to the grantee's process (or are gone), the notice goes on the lock's own channel
-- (`next:* <ms>`), where each process that waits arms one check for the lease's end.
-- Expects  lineKey, deadlinesKey, seenKey, now, publishCommand, channel, waiterChannelOf,
--          noticeMs, grantedOwner (the grantee's owner id)
-- Defines  nothing

do
  local grantedClient = string.match(grantedOwner, '^(.*):%d+$') or grantedOwner
  local ahead = redis.call('lrange', lineKey, 0, 63)
  local told = false
  for _, nextEntry in ipairs(ahead) do
    local nextOwner, nextKind = string.match(nextEntry, '^(%S+) %S+ %d+ ([pfrw])$')
    local nextClient = nextOwner and (string.match(nextOwner, '^(.*):%d+$') or nextOwner)
    local nextDeadline = tonumber(redis.call('zscore', deadlinesKey, nextEntry))
    if nextClient and nextClient ~= grantedClient and nextDeadline and nextDeadline > now
      and redis.call('hexists', seenKey, '~dead:' .. nextClient) == 0 then
      if nextKind ~= 'f' then
        redis.call(publishCommand, waiterChannelOf(nextKind, nextOwner), 'next:' .. nextEntry .. ' ' .. noticeMs)
      end
      told = true
      break
    end
  end
  if not told and #ahead == 64 then
    redis.call(publishCommand, channel, 'next:* ' .. noticeMs)
  end
end
