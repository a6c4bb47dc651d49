-- Whether anybody listens on a waiter's channel (line-waiter-channel) on this server right now:
-- PUBSUB NUMSUB, or PUBSUB SHARDNUMSUB on a cluster (its waiters SSUBSCRIBE shard channels in the
-- lock's slot, so the lock's own shard counts them). A killed process's subscriber connection
-- closes at once, so its channels go unheard at once; so does a live process's during a network
-- blip or right after a failover, which is why only a waiter's own attempt that found itself heard
-- lets its entry be judged by this (line-join), and why being judged so costs a waiter its place in
-- line only, never the lock's safety (line-live-head). A server that refuses the call (a
-- Redis-compatible one without PUBSUB in scripts) counts as heard: nothing is judged.
-- Expects  publishCommand, waiterChannelOf
-- Defines  seatHeard(kind, owner)

local numsubCommand = publishCommand == 'spublish' and 'shardnumsub' or 'numsub'
local function seatHeard(kind, owner)
  local counts = redis.pcall('pubsub', numsubCommand, waiterChannelOf(kind, owner))
  if type(counts) ~= 'table' or counts.err or not tonumber(counts[2]) then
    return true
  end
  return tonumber(counts[2]) > 0
end
