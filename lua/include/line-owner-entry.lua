-- One owner stands in a line once: a second acquisition of the same owner (two concurrent calls on
-- one lock object) does not add an entry while the owner's first one is live; it waits behind that
-- entry, and re-enters once the owner holds (line-drop-own-entry). The waiters' last-attempt hash
-- keeps each owner's entry in the field 'o <owner id>' (no entry has that shape), overwritten by
-- the owner's next join and gone with the line.
-- Expects  deadlinesKey, seenKey, myEntry, ownerId, now
-- Defines  ownEntry (the entry this attempt keeps in line: myEntry, or the owner's live one)

local ownerField = 'o ' .. ownerId
local ownEntry = myEntry
if not redis.call('zscore', deadlinesKey, myEntry) then
  local standing = redis.call('hget', seenKey, ownerField)
  local standingUntil = standing and tonumber(redis.call('zscore', deadlinesKey, standing))
  if standingUntil and standingUntil > now and standing ~= myEntry then
    ownEntry = standing
  end
end
