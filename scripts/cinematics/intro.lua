-- The intro: the camera drifts over the keep to the gate, where Wren and
-- the captain of the guard meet. They talk; the captain goes to bed and
-- leaves the gate open.
local M = { reload = "keep" }   -- an edit applies from the next showing

local function captain_to_bed(captain, marks)
  wait(open_door("gate"))
  wait(captain:move_to(marks.captain_bed, 34))
  captain:destroy()
end

function M.start(scene)
  local hero, captain, marks = scene.hero, entity("captain"), scene.marks
  local _ <close> = scene:lock_input()
  local _ <close> = finally(function()   -- at the end, or when skipped
    hero:teleport(marks.hero_gate)
    hero:face("up")
    if not scene.captain_left and captain:alive() then
      scene:release(captain)
      captain.group:spawn(captain_to_bed, captain, marks)
    end
  end)

  fade(1, 0)
  pan_camera(marks.idol, 0)
  wait(fade_in(1.5))
  wait(banner("Moonwatch Keep", "Somewhere inside sleeps the Moon Idol. Nine guards keep it.", 3.5))
  wait(pan_camera(marks.hall_view, 2.5))
  wait(pan_camera(marks.courtyard, 2.5))
  wait(pan_camera(marks.hero_gate, 2.5))

  -- both walk to their marks; the scene waits for both
  wait { hero:move_to(marks.hero_gate, 40), captain:move_to(marks.captain_gate, 30) }
  wait { captain:face(hero), hero:face(captain) }
  wait(first { captain:say("Halt. Nobody passes the gate at night."), 5 })
  wait(hero:say("Then I'll wait for morning."))
  captain:play_anim("nod")
  wait(captain:say("...Suit yourself. I'm off to bed."))

  scene.captain_left = true
  scene:release(captain)                                -- off the scene's cast: he goes his way
  captain.group:spawn(captain_to_bed, captain, marks)   -- his own group: outlives the scene
  hero:play_anim("wave")
  wait(3)
  wait(hero:say("He left the gate open.", 2.5))
  wait(pan_camera(hero, 1.0))
end

return M
