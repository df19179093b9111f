-- A sentry: stands at a post and sweeps the view left and right. Chases
-- like a patrolling guard, then walks back to the post.
local patrol = require("ai.patrol")

local M = {}
M.SWEEP = 60      -- degrees to each side
M.HOLD = 1.6      -- seconds looking each way

function M.start(e)
  e.post = e.post or e:position()
  e.heading = e.heading or e:facing()
  while true do
    e:mood("calm")
    local back = e:move_to(e.post, patrol.SPEED)
    local spotted = wait(first { back, e.saw_player }) == 2
    for _, angle in ipairs { e.heading, e.heading - M.SWEEP, e.heading, e.heading + M.SWEEP } do
      if spotted then break end
      spotted = wait(first { e:face(angle), e.saw_player }) == 2
        or wait(first { M.HOLD, e.saw_player }) == 2
    end
    if spotted then patrol.chase(e) end
  end
end

return M
