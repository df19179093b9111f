-- Escape skips the intro in the middle of a line of dialogue: the task is
-- cancelled and its <close> cleanups put the game right: input unlocked,
-- speech cleared, fade lifted, camera back on the hero, the hero on its
-- mark, the gate opening.
local check = require("lib.check")
local game = require("lib.game")
local cinema = require("lib.cinema")

check.within(60, "the level loads", function() return game.state.phase == "intro" end)
check.within(40, "the captain speaks", function() return overlay_shown("dialogue") end)
check.expect(input_locked(), "input is locked during the intro")
check.expect(overlay_shown("letterbox"), "letterbox bars during the intro")

tap("escape")
wait()   -- the skip runs at once; give the world one frame
check.expect(cinema.state.last and cinema.state.last.status == "cancelled", "the intro was cancelled")
check.expect(game.state.phase == "play", "the game went on to play")
check.expect(not input_locked(), "cleanup unlocked the input")
check.expect(not overlay_shown("dialogue"), "cleanup cleared the dialogue box")
check.expect(game_state().fade == 0, "cleanup lifted the fade")
check.expect(game_state().following == player(), "cleanup put the camera back on the hero")
check.expect(check.dist(player():position(), mark("hero_gate")) < 1, "cleanup put the hero on its mark")
check.within(1, "the gate opens", function() return door_open("gate") end)

-- and the hero can walk
local at = player():position()
wait(hold("left", 0.5))
check.expect(at.x - player():position().x > 20, "the hero moves after the skip")
