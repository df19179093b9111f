-- tests/demo/live/scripts/ai/leaky.lua, fixed: one listener, kept.
local M = {}

local function listen(e)
  return spawn(function() wait(math.huge) end)
end

function M.start(e)
  local ears = listen(e)
  while true do
    wait()
  end
end

return M
