-- The first live waiter of a lock's line, popping what stands before it: tombstones (an entry that
-- left, or whose deadline was dropped: it has no deadline), entries whose deadline passed, and the
-- entries of a client marked dead (field '~dead:<client id>' of the last-attempts hash: a grant to
-- one of its owners was neither released nor given back, see line-grant-head), so the dead are
-- skipped together. At most headBudget entries are popped per script: a line that still starts
-- with gone entries when it runs out has no live head for this script (entry false, headBlocked
-- true); the next script goes on from there.
-- An entry can stand twice in the list (a tombstone, then pushed again by its waiter's retry once
-- its deadline was dropped): whichever copy comes first is served, and the grant removes the
-- deadline, so the other copy is a tombstone and is never served.
-- headBudget is how many entries this script may still pop; it is decremented.
-- Expects  lineKey, deadlinesKey, seenKey, now, headBudget
-- Defines  entry (the live head, not popped, or false), headBlocked

local entry = false
local headBlocked = false
while true do
  local head = redis.call('lindex', lineKey, 0)
  if not head then break end
  local deadline = tonumber(redis.call('zscore', deadlinesKey, head))
  local headClient = string.match(head, '^(%S+):%d+ ')
  if deadline and deadline > now
    and not (headClient and redis.call('hexists', seenKey, '~dead:' .. headClient) == 1) then
    entry = head
    break
  end
  if headBudget <= 0 then
    headBlocked = true
    break
  end
  headBudget = headBudget - 1
  redis.call('lpop', lineKey)
  if deadline then
    redis.call('zrem', deadlinesKey, head)
    redis.call('hdel', seenKey, head)
  end
end
