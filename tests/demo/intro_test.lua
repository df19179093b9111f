-- The intro plays to its end by itself (no key pressed) and hands control
-- to the player: input unlocked, the camera on the hero, the gate open,
-- and the arrow keys move the hero.
local check = require("lib.check")
local game = require("lib.game")
local cinema = require("lib.cinema")

check.within(60, "the level loads", function() return game.state.phase == "intro" end)
check.within(3, "the intro starts", function() return cinema.state.current == "cinematics.intro" end)
check.expect(input_locked(), "input is locked during the intro")

-- the player cannot move while the intro runs
local before = player():position()
wait(hold("right", 1.0))
check.expect(check.dist(before, player():position()) < 1, "the hero did not move on input during the intro")

check.within(60, "the intro ends", function() return game.state.phase == "play" end)
check.expect(cinema.state.last.name == "cinematics.intro", "the intro was the last cinematic")
check.expect(cinema.state.last.status == "done", "the intro ran to its end, got " .. tostring(cinema.state.last.status))
check.expect(not input_locked(), "input is unlocked after the intro")
check.expect(game_state().following == player(), "the camera follows the hero")
check.expect(game_state().fade == 0, "the screen is not faded")
check.expect(door_open("gate"), "the gate is open")
check.expect(check.dist(player():position(), mark("hero_gate")) < 2, "the hero stands at the gate")

-- now the hero walks north through the gate
local at = player():position()
wait(hold("up", 1.5))
local now = player():position()
check.expect(at.y - now.y > 60, "the hero walked north (moved " .. (at.y - now.y) .. " units)")
print(("intro: %d frames, hero walked %.0f units north"):format(frame(), at.y - now.y))
