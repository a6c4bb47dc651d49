-- After a grant, the next live waiter in line (not a fair one: it heartbeats anyway) is told how
-- long the grant lease runs (`next:<entry> <ms>` on its channel): it sleeps no longer than that.
-- If the grantee died without taking the lock, that waiter attempts when the grant lease ends (and
-- the failed grantee's entries are skipped together, line-failed-grantee), not when the lease it
-- was told last would have ended. Only the first few entries are looked at (bounded): a line whose
-- head is all gone entries tells nobody, and its waiters' own attempts clear it.
-- Expects  lineKey, deadlinesKey, now, publishCommand, waiterChannelOf, noticeMs
-- Defines  nothing

for _, nextEntry in ipairs(redis.call('lrange', lineKey, 0, 7)) do
  local nextDeadline = tonumber(redis.call('zscore', deadlinesKey, nextEntry))
  if nextDeadline and nextDeadline > now then
    local nextOwner, nextKind = string.match(nextEntry, '^(%S+) %S+ %d+ ([pfrw])$')
    if nextOwner and nextKind ~= 'f' then
      redis.call(publishCommand, waiterChannelOf(nextKind, nextOwner), 'next:' .. nextEntry .. ' ' .. noticeMs)
    end
    break
  end
end
