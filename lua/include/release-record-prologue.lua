-- The start of a release that may be a plain release or an undo. A plain release (grantedBy == '')
-- replays its recorded outcome when it is a resend (release-record-replay.lua) and records its
-- outcome at the end; an undo checks what it may undo (release-undo-check.lua).
-- Expects  grantedBy, recordKey, holdKey (the hash holding requestField), requestField, handedField
-- Defines  nothing

if grantedBy == '' then
  -- #include release-record-replay
else
  -- #include release-undo-check
end
