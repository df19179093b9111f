-- Zone "garden": old Bram, who has tended the roses for forty years, has
-- advice for a thief.
local util = require("lib.util")
local tween = require("lib.tween")

local M = { reload = "keep", from = "after_intro" }   -- --play previews it in that world state (lib/states.lua)

function M.start(scene)
  local hero, sage = scene.hero, entity("sage")
  local _ <close> = scene:lock_input()
  if not sage then return end

  wait(pan_camera(sage, 1.2))
  wait(sage:say("Psst! You there. Over here."))
  wait { sage:move_to(util.toward(sage, hero, 22), 30), hero:face(sage) }
  wait { sage:face(hero), pan_camera(hero, 0.6) }
  beat("advice")
  tween(tween.camera, { zoom = 1.5 }, 1.5, "in_out_sine")        -- close in while he talks
  wait(sage:say("The guards see only what their lanterns light."))
  wait(sage:say("Walls, trees and pillars hide you. Slip past while they look away."))
  wait(hero:say("And the idol?"))
  sage:play_anim("nod")
  wait(sage:say("North, past the great hall. The vault opens for whoever stands before it."))
  wait { sage:play_anim("wave"), tween(tween.camera, { zoom = 1 }, 0.8, "out_quad") }
end

return M
