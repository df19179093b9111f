-- The lookout, fixed: it keeps watch.
local M = {}

function M.start(e)
  e.watching = true
  while true do
    wait(e.saw_player)
    e:say("!", 0.5)
  end
end

return M
