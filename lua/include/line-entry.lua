-- The parts of a waiter's entry in a lock's line: '<owner id> <acquire request id>[/<join>] <lease ms> <kind>'
-- (p: a plain waiter, woken on the lock's channel; f: a fair one, woken on a channel of its own;
-- r, w: a read-write lock's reader or writer, woken on that lock's channel).
-- An entry an older version wrote (an owner id alone) has no parts: that waiter is only woken.
-- Expects  entry
-- Defines  entryOwner, entryRequest, entryLease (strings, or nil for an older entry), entryKind

-- The request part may end in '/<join>' (the acquisition's n-th join of the line, after it gave a
-- late grant back): entries are unique per join, the request id applied to the lock is the bare one.
local entryOwner, entryRequest, entryLease, entryKind = string.match(entry, '^(%S+) ([^%s/]+)%S* (%d+) ([pfrw])$')
