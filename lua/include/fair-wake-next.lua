-- A fair lock was just freed: wake the waiter at the head of its line, or, with nobody in line,
-- delete the line's keys and wake plain-lock waiters on the shared channel.
-- Expects  lineKey, deadlinesKey, publishCommand, waiterChannelPrefix, sharedChannel, unlockMessage
-- Defines  time, now, expired (see the blocks it includes), head (the woken waiter, or false)

-- Wake a live head only: drop the waiters whose deadline passed first.
-- #include server-clock
-- #include fair-drop-expired-waiters
local head = redis.call('lindex', lineKey, 0)
if head then
  redis.call(publishCommand, waiterChannelPrefix .. head, unlockMessage)
else
  redis.call('del', lineKey, deadlinesKey)
  redis.call(publishCommand, sharedChannel, unlockMessage)
end
