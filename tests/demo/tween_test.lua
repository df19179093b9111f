-- Tweens: a number field, an entity's position and alpha, the camera, the
-- screen's fade and light glide with the easing asked for, on the clock of
-- the group that started them; cancelled with their task.
local check = require("lib.check")
local tween = require("lib.tween")

local function near(a, b, what)
  check.expect(math.abs(a - b) < 0.02 * math.max(1, math.abs(b)), what .. ": " .. a .. ", expected " .. b)
end

-- the easings by name, at chosen points
local E = tween.easings
near(E.linear(0.25), 0.25, "linear")
near(E.in_quad(0.5), 0.25, "in_quad")
near(E.out_cubic(0.5), 0.875, "out_cubic")
near(E.in_out_sine(0.25), (1 - math.cos(math.pi / 4)) / 2, "in_out_sine")
near(E.out_back(1), 1, "out_back ends at 1")
check.expect(E.out_back(0.7) > 1, "out_back overshoots")
near(E.out_bounce(1), 1, "out_bounce ends at 1")
near(E.out_elastic(1), 1, "out_elastic ends at 1")

check.skip_intro()

-- a script table, in_quad over 2 s: a quarter of the way at 1 s
local t = { v = 0 }
local f = tween(t, { v = 100 }, 2, "in_quad")
wait(1)
near(t.v, 25, "in_quad at 1 s of 2")
check.expect(wait(f) == "done", "the future resolves to done")
near(t.v, 100, "it ends on the value")

-- on its group's clock: at time_scale 0.5, 1 s of game time is a quarter
local slow = group { time_scale = 0.5, name = "slow tween" }
local s = { v = 0 }
slow:spawn(function() wait(tween(s, { v = 1 }, 2)) end)
wait(2)
near(s.v, 0.5, "at half speed, 2 s of game time are half of a 2 s tween")
slow:cancel()
local at = s.v
wait(0.5)
check.expect(s.v == at, "cancelled with its task: it stops where it is")

-- an entity's alpha and position, the camera, the fade and the light
local guard = entity("gate_guard")
guard.group:cancel()
guard:stop()
local p = guard:position()
wait(tween(guard, { alpha = 0.2, x = p.x + 32 }, 1, "out_cubic"))
near(guard:alpha(), 0.2, "the guard fades to 0.2")
near(guard:position().x, p.x + 32, "and slides 32 units")
local cam = game_state().camera
local goal = { x = cam.x + 40, y = cam.y }
local cf = tween(tween.camera, goal, 1, "linear")
wait(0.5)
near(game_state().camera.x, cam.x + 20, "the camera halfway at 0.5 s")
wait(cf)
near(game_state().camera.x, cam.x + 40, "the camera there")
wait(tween(tween.screen, { fade = 0.5, r = 1, g = 0.8, b = 0.6 }, 0.5))
near(game_state().fade, 0.5, "the screen half faded")
near(game_state().light[2], 0.8, "the light's green")
wait(tween(tween.screen, { fade = 0 }, 0))
local ok, err = pcall(tween, t, { v = 1 }, 1, "wobbly")
check.expect(not ok and err:find("no easing named 'wobbly'"), "an unknown easing is an error naming it")

-- the camera's zoom: a verb and a tween
local z = zoom_camera(2, 1)
wait(0.5)
check.expect(game_state().zoom > 1.3 and game_state().zoom < 1.7, "halfway in at 0.5 s: " .. game_state().zoom)
check.expect(wait(z) == "done", "zoom_camera's future resolves")
near(game_state().zoom, 2, "zoomed in twice")
screenshot("build/demo-test/zoomed.png")
wait(tween(tween.camera, { zoom = 1 }, 0.5, "out_quad"))
near(game_state().zoom, 1, "a tween zooms back out")
check.expect(not pcall(zoom_camera, 0.5), "zooming out past 1 is refused")
