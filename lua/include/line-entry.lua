-- The parts of a waiter's entry in a lock's line: '<owner id> <acquire request id> <lease ms> <kind>'
-- (p: a plain waiter, woken on the lock's channel; f: a fair one, woken on a channel of its own;
-- r, w: a read-write lock's reader or writer, woken on that lock's channel).
-- An entry an older version wrote (an owner id alone) has no parts: that waiter is only woken.
-- Expects  entry
-- Defines  entryOwner, entryRequest, entryLease (strings, or nil for an older entry), entryKind

local entryOwner, entryRequest, entryLease, entryKind = string.match(entry, '^(%S+) (%S+) (%d+) ([pfrw])$')
