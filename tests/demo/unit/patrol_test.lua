-- A behaviour tested without the game: ai.patrol against fake entities
-- (lib/fakes.lua), under `weft test`:
--   build/weft test tests/demo/unit --scripts scripts
local fakes = require("lib.fakes")
local patrol = require("ai.patrol")

local route = { { x = 40, y = 0 }, { x = 40, y = 40 } }

test("a guard walks to its next waypoint at its speed", function()
  local e = fakes.entity { x = 0, y = 0, waypoints = route, leg = 1 }
  local t = spawn(patrol.start, e)
  wait(0.9)
  assert(e.x == 0, "not there before 1 s")
  wait(0.2)                                   -- 40 units at 40 a second
  assert(e.x == 40 and e.y == 0, "at the first waypoint after 1 s: " .. e.x .. ", " .. e.y)
  assert(e.leg == 2, "heading for the second next: " .. e.leg)
  t:cancel()
end)

test("at a waypoint it looks left, right, then ahead", function()
  local e = fakes.entity { x = 40, y = 0, angle = 90, waypoints = route, leg = 1 }
  local t = spawn(patrol.start, e)
  wait(0.1)
  local turns = {}
  for i = 1, 3 do
    wait_until(function() return #turns < i and e._face == nil and e.angle ~= (turns[i - 1] or 90) end)
    turns[i] = e.angle
  end
  assert(turns[1] == 20 and turns[2] == 160 and turns[3] == 90,
    "looked at " .. table.concat(turns, ", "))
  t:cancel()
end)

test("look_around returns true at once when the player is already in sight", function()
  local e = fakes.entity { x = 0, y = 0 }
  fakes.see(e, true)
  local t0 = now()
  assert(patrol.look_around(e, 70) == true, "it saw the player")
  assert(now() - t0 < 0.01, "without waiting: " .. (now() - t0))
end)

test("look_around takes its time and returns false when nobody shows up", function()
  local e = fakes.entity { x = 0, y = 0 }
  local t0 = now()
  assert(patrol.look_around(e, 70) == false)
  local took = now() - t0
  assert(math.abs(took - 3 * (0.25 + patrol.LOOK)) < 0.05, "three turns and looks: " .. took)
end)

test("a chase runs after the player, and searches where it lost them", function()
  fakes.stub_game()                           -- player() is fakes.player
  fakes.player.x, fakes.player.y = 200, 0
  local e = fakes.entity { x = 0, y = 0 }
  fakes.see(e, true)
  local t = spawn(patrol.chase, e)
  wait(0.5)
  assert(e.said == "!" and e._move, "it shouted and runs after the player")
  assert(e:mood() == "alert", "alert: " .. e:mood())
  fakes.see(e, false)                         -- the player hides
  wait_until(function() return e.said == "?" end)
  assert(e:mood() == "suspicious", "searching: " .. e:mood())
  wait(t)                                     -- the search ends
  assert(t.status == "done")
end)
