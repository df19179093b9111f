-- Someone at home: potters about near where they stand, now and then
-- muttering to themselves.
local M = {}
M.RANGE = 20       -- how far from home they wander, units

local mutters = { "Hmm...", "Where did I put my spectacles?", "Roses need water.", "*yawn*" }

function M.start(e)
  e.home = e.home or e:position()
  while true do
    wait(3 + math.random() * 3)
    local spot = {
      x = e.home.x + math.random(-M.RANGE, M.RANGE),
      y = e.home.y + math.random(-M.RANGE // 2, M.RANGE // 2),
    }
    wait(e:move_to(spot, 18))
    wait(e:face("down"))
    if math.random() < 0.35 then
      wait(e:say(mutters[math.random(#mutters)], 2))
    end
  end
end

return M
