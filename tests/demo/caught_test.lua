-- Walking into a guard gets the hero caught: the "caught" cinematic plays
-- (input locked), then the hero is back outside the gate with control.
local check = require("lib.check")
local util = require("lib.util")
local cinema = require("lib.cinema")
local game = require("lib.game")

check.skip_intro()
local guard = entity("well_guard")
local spot
check.within(10, "a spot just ahead of the guard", function()
  local p = util.ahead(guard, 24)
  if guard:can_see(p) and p.x < tile(41, 0).x then spot = p return true end   -- not in the garden
end)
player():teleport(spot)
check.within(3, "the guard catches the hero", function() return cinema.state.current == "cinematics.caught" end)
check.expect(input_locked(), "input is locked while caught")
check.within(10, "the caught scene ends", function() return cinema.state.current == nil end)
check.expect(game.state.caught == 1, "caught once")
check.expect(check.dist(player():position(), mark("hero_gate")) < 1, "the hero is back at the gate")
check.expect(not input_locked() and game_state().fade == 0, "control and picture are back")
