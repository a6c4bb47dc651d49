-- The first live waiter of a lock's line, popping what stands before it: tombstones (an entry that
-- left, or whose deadline was dropped: it has no deadline), entries whose deadline passed, and the
-- entries of a client marked dead (field '~dead:<client id>' of the last-attempts hash: a grant to
-- one of its owners was neither released nor given back, see line-grant-head), so the dead are
-- skipped together. An entry whose waiter last attempted with its seat subscribed (its record ends
-- in ' s', line-join) but whose channel nobody hears now (line-seat-heard) is gone too: its
-- process died (or its subscriber connection is down). Only that entry goes: no client mark, so a
-- live fair waiter of the same process (its owner's own channel, heard) keeps its place; a crash
-- costs no grant lease at all when its waiters had subscribed, each judged as it reaches the head.
-- A live waiter judged so only loses its place: skipping grants nothing, and its next attempt (a
-- heartbeat, its TTL, the reconnect's wake-up) joins the line again at its end. The caller's own entry
-- (callerEntry: an attempt in progress) is alive: neither a mark nor its channel skips it.
-- At most headBudget entries are popped per script: a line that still starts
-- with gone entries when it runs out has no live head for this script (entry false, headBlocked
-- true); the next script goes on from there.
-- An entry can stand twice in the list (a tombstone, then pushed again by its waiter's retry once
-- its deadline was dropped): whichever copy comes first is served, and the grant removes the
-- deadline, so the other copy is a tombstone and is never served.
-- headBudget is how many entries this script may still pop; it is decremented.
-- Expects  lineKey, deadlinesKey, seenKey, now, headBudget, callerEntry, waiterChannelOf,
--          seatHeard (line-seat-heard)
-- Defines  entry (the live head, not popped, or false), headBlocked,
--          skippedUnheard (an entry was skipped for its channel going unheard)

local entry = false
local headBlocked = false
local skippedUnheard = false
while true do
  local head = redis.call('lindex', lineKey, 0)
  if not head then break end
  local deadline = tonumber(redis.call('zscore', deadlinesKey, head))
  local headClient = string.match(head, '^(%S+):%d+ ')
  local live = deadline and deadline > now
    and (head == callerEntry or not (headClient and redis.call('hexists', seenKey, '~dead:' .. headClient) == 1))
  if live and head ~= callerEntry then
    local headRecord = redis.call('hget', seenKey, head)
    local headOwner, headKind = string.match(head, '^(%S+) %S+ %d+ ([pfrw])$')
    if headOwner and headRecord and string.sub(headRecord, -2) == ' s' and not seatHeard(headKind, headOwner) then
      -- Only this entry: its channel speaks for its own waiters, not for the client's others (a
      -- fair waiter of the same process hears its owner's own channel). A dead process's other
      -- entries are judged the same way as they come to the head: one NUMSUB each.
      live = false
      skippedUnheard = true
    end
  end
  if live then
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
