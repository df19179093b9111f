-- A guard who sees the hero raises the alarm and chases; when the hero
-- gets away, it searches, gives up and goes back to its patrol route.
local check = require("lib.check")
local util = require("lib.util")

check.skip_intro()
local guard = entity("well_guard")
check.expect(guard:mood() == "calm", "the guard starts calm")

-- stand in the guard's lantern light, a few tiles ahead of it
local spot
check.within(10, "a clear spot in front of the guard", function()
  for d = 64, 30, -4 do
    local p = util.ahead(guard, d)
    if guard:can_see(p) and p.x < tile(41, 0).x then spot = p return true end   -- not in the garden
  end
end)
player():teleport(spot)
check.within(1, "the guard notices the hero", function() return guard:mood() == "alert" end)
local gap = guard:distance(player())
wait(0.4)
check.expect(guard:distance(player()) < gap - 10, "the guard runs at the hero")

-- get away: out of sight behind the keep's wall, far from the guard
player():teleport(mark("hero_gate"))
check.within(3, "the guard loses the hero", function() return guard:mood() == "suspicious" end)
check.within(15, "the guard gives up", function() return guard:mood() == "calm" end)
local function on_route()
  for _, w in ipairs(guard.waypoints) do
    if check.dist(guard:position(), w) < 2 then return true end
  end
end
check.within(20, "the guard walks back onto its route", on_route)
print("chase: guard back on its route at frame " .. frame())
