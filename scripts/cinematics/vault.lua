-- Zone "vault_door": the great door grinds open before Wren.
local tween = require("lib.tween")

local M = { reload = "keep", from = "after_intro" }   -- --play previews it in that world state (lib/states.lua)

function M.start(scene)
  local hero = scene.hero
  local _ <close> = scene:lock_input()
  local _ <close> = finally(function() open_door("vault") end)   -- a skip still opens it

  wait(hero:face("up"))
  shake_camera(1.5, 1.0)
  wait(tween(tween.camera, scene.marks.vault_view, 1.5, "in_out_sine"))   -- eased, not linear
  beat("door opens")
  wait(open_door("vault"))
  wait(1)
  wait(hero:say("The Moon Idol. It's real.", 2.5))
end

return M
