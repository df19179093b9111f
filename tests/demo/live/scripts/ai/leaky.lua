-- A test brain (tests/demo/live/pile_up.lua) whose helper leaves a task
-- behind every frame: they pile up.
local M = {}

local function listen(e)
  spawn(function() wait(math.huge) end)   -- line 6: never ends
end

function M.start(e)
  while true do
    listen(e)
    wait()
  end
end

return M
