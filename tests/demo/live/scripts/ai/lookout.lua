-- A behaviour saved with a typo before the game starts: its first load
-- fails. (tests/demo/live/broken_brain.lua saves the fixed version.)
local M = {}

function M.start(e)
  e.watching = = true
end

return M
