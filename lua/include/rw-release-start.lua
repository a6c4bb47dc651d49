-- The start of rw-read-release.lua and rw-write-release.lua, whose KEYS and ARGV are the same but
-- for the meaning of ARGV[4] (the unlock message, named by each script): names them, replays a
-- resent release or checks an undo (release-record-prologue.lua), and drops the owners whose lease
-- ran out.
-- Expects  nothing
-- Defines  rwKey, leasesKey, channel, recordKey, lineKey, deadlinesKey, seenKey, fenceKey, ownerId,
--          recordTtlMs, publishCommand, grantedBy, grantCapMs, fenceMemoryMs, readField, requestField,
--          handedField, holdKey, HOLDS_OTHER_MODE, time, now

local rwKey = KEYS[1]
local leasesKey = KEYS[2]
local channel = KEYS[3]
local recordKey = KEYS[4]
local lineKey = KEYS[5]
local deadlinesKey = KEYS[6]
local seenKey = KEYS[7]
local fenceKey = KEYS[8]
local ownerId = ARGV[1]
local recordTtlMs = ARGV[2]
local publishCommand = ARGV[3]
local grantedBy = ARGV[5]
local grantCapMs = ARGV[6]
local fenceMemoryMs = ARGV[7]
local readField = 'read:' .. ownerId
local requestField = 'rq:' .. ownerId
-- The request a line handed the lock to (see rw-grant-line)
local handedField = 'handed:rq:' .. ownerId
local holdKey = rwKey
local HOLDS_OTHER_MODE = -1

-- #include release-record-prologue

-- #include server-clock

-- #include rw-drop-expired-owners
