-- Script time reaches the world: an entity's walk, turn and balloon, and
-- the camera's pans and fades, run on the clock of the group whose script
-- started them (its time scale, its pause), as that script's waits do.
-- The player's own walking follows the game's clock (P, T, time_scale()).
local check = require("lib.check")

check.skip_intro()
local guard = entity("gate_guard")
guard.group:cancel()                 -- its patrol stops; the group stays
local from, to = tile(19, 22), tile(26, 22)   -- open ground, 7 tiles

-- Walks from `from` to `to` in a task of guard.group; the game time it took.
local function walk()
  guard:teleport(from)
  local t = guard.group:spawn(function()
    local t0 = now()
    check.expect(wait(guard:move_to(to, 56)) == "arrived", "the guard arrives")
    return now() - t0
  end)
  return wait(t)
end

local base = walk()
check.expect(math.abs(base - 2) < 0.1, "a 112-unit walk at 56/s takes 2 s (" .. base .. ")")
guard.group.time_scale = 0.25
local slow = walk()
check.expect(math.abs(slow / base - 4) < 0.2,
  "at time_scale 0.25 the walk takes 4 times as long (" .. base .. " s, then " .. slow .. " s)")
print(("walk: %.3f s at 1, %.3f s at 0.25"):format(base, slow))

-- a paused group's entity stands still, then goes on from there
guard.group.time_scale = 1
guard:teleport(from)
local arrived = guard.group:spawn(function() return wait(guard:move_to(to, 56)) end)
wait(0.5)
guard.group:pause()
local held = guard:position()
wait(1)
check.expect(check.dist(held, guard:position()) < 0.01, "a paused group's entity stands still")
guard.group:resume()
check.expect(wait(arrived) == "arrived", "it walks on after resume")

-- turning and a balloon's time follow the group too
guard.group.time_scale = 0.5
local said = guard.group:spawn(function()
  local t0 = now()
  wait(guard:say("Quiet night.", 1))
  return now() - t0
end)
local talk = wait(said)
check.expect(math.abs(talk - 2) < 0.1, "a 1 s balloon at half speed shows 2 s (" .. talk .. ")")
guard:face("right")
wait(guard.group:spawn(function() wait(guard:face(0)) end))
local turned = guard.group:spawn(function()
  local t0 = now()
  wait(guard:face(180))
  return now() - t0
end)
local fast = wait(turned)
guard.group.time_scale = 1
wait(guard.group:spawn(function() wait(guard:face(0)) end))
local normal = wait(guard.group:spawn(function()
  local t0 = now()
  wait(guard:face(180))
  return now() - t0
end))
check.expect(math.abs(fast / normal - 2) < 0.25, "a turn at half speed takes twice as long (" .. normal .. " s, then " .. fast .. " s)")

-- a camera pan and a fade a script starts follow its group
local slowmo = group { time_scale = 0.5, name = "slow motion" }
local panned, faded = wait(slowmo:spawn(function()
  local t0 = now()
  wait(pan_camera(mark("courtyard"), 1))
  local t1 = now()
  wait(fade(0.5, 1))
  wait(fade(0, 0))
  return t1 - t0, now() - t1
end))
check.expect(math.abs(panned - 2) < 0.1, "a 1 s pan at half speed takes 2 s (" .. panned .. ")")
check.expect(math.abs(faded - 2) < 0.1, "a 1 s fade at half speed takes 2 s (" .. faded .. ")")

-- the world's own clock: time_scale() slows the game, the player's walking too
time_scale(0.5)
local hero = player()
hero:teleport(from)
local p0 = hero:position()
wait(hold("right", 0.5))
local half = check.dist(p0, hero:position())
time_scale(1)
hero:teleport(from)
wait(hold("right", 0.5))
local full = check.dist(from, hero:position())
check.expect(math.abs(half / full - 0.5) < 0.1,
  "at time_scale(0.5) the player walks half as far in the same time (" .. half .. " / " .. full .. ")")
slowmo:cancel()

-- clocks are given back: after many short-lived groups, a slowed group
-- still slows its walk
for i = 1, 40 do
  local g = group { time_scale = 2, name = "brief " .. i }
  wait(g:spawn(function() wait(guard:face(i % 2 == 0 and 0 or 180)) end))
  g:cancel()
end
guard.group.time_scale = 0.25
local again = walk()
check.expect(math.abs(again / base - 4) < 0.2, "after 40 groups came and went, still 4 times as long (" .. again .. " s)")
guard.group.time_scale = 1
