-- A test behaviour with a helper task in the entity's group (its ears),
-- started the way that does not leak across reloads. Version 1.
local util = require("lib.util")
local M = {}

local function ears(e)
  while true do wait(e.saw_player) end
end

function M.start(e)
  util.helper(e, "ears", ears)
  while true do wait(1) end
end

return M
