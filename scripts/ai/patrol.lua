-- A guard's patrol: walk the route, look around at each waypoint. On
-- sight of the player: chase. After losing sight: search where the player
-- was last seen, then go back to the route.
local cinema = require("lib.cinema")

local M = {}
M.SPEED = 40          -- walking, units per second (a tile is 16)
M.CHASE_SPEED = 64    -- the hero runs at 72: a good runner gets away
M.LOOK = 0.7          -- seconds spent looking each way at a waypoint
M.SEARCH = 3          -- seconds spent searching after losing sight
M.CATCH = 13          -- closer than this is caught

-- Looks left, right, then ahead again. Returns true as soon as the
-- player shows up.
function M.look_around(e, spread)
  local ahead = e:facing()
  for _, angle in ipairs { ahead - spread, ahead + spread, ahead } do
    if wait(first { e:face(angle), e.saw_player }) == 2 then return true end
    if wait(first { M.LOOK, e.saw_player }) == 2 then return true end
  end
  return false
end

function M.start(e)
  e.leg = e.leg or math.random(#e.waypoints)   -- the first waypoint it heads for: --seed picks it
  while true do
    e:mood("calm")
    local arrived = e:move_to(e.waypoints[e.leg], M.SPEED)
    local spotted = wait(first { arrived, e.saw_player }) == 2
    if not spotted then
      e.leg = e.leg % #e.waypoints + 1
      spotted = M.look_around(e, 70)
    end
    if spotted then M.chase(e) end
  end
end

-- Runs after the player while it can see them; searches when it can't.
-- Returns when the search finds nothing (or after catching the player).
function M.chase(e)
  local hero = player()
  e:mood("alert")
  e:say("!", 0.8)
  repeat
    local last = hero:position()
    while e:can_see(hero) do
      last = hero:position()
      if e:distance(hero) < M.CATCH then
        cinema.catch(e)
        return
      end
      e:move_to(hero, M.CHASE_SPEED)
      wait(0.2)
    end
    -- lost sight: go where the player was last seen and look around
    e:mood("suspicious")
    e:say("?", 1.2)
    local found = wait(first { e:move_to(last, M.SPEED * 1.3), e.saw_player }) == 2
    if not found then
      found = M.look_around(e, 90) or wait(first { M.SEARCH / 2, e.saw_player }) == 2
    end
    if found then
      e:mood("alert")
      e:say("!", 0.8)
    end
  until not found
  e:say("Must have been the wind.", 2)
end

return M
