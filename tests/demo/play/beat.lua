-- weft-demo --play cinematics.sage --beat advice: the game runs unseen up
-- to the beat, then plays on from there (run by tests/demo/run.sh).
local check = require("lib.check")
local cinema = require("lib.cinema")

check.expect(game_state().fast_forward, "it starts running unseen")
wait_until(function() return not game_state().fast_forward end)
check.expect(game_state().beat == "advice", "it stopped at the beat (" .. game_state().beat .. ")")
check.expect(cinema.state.current == "cinematics.sage", "in the sage's cinematic")
wait()
local d = game_state().dialogue
check.expect(d and d.text == "The guards see only what their lanterns light.",
  "the scene goes on from the beat: " .. tostring(d and d.text))
wait(1.2)
check.expect(game_state().zoom > 1.2, "the camera closes in while Bram talks: " .. game_state().zoom)
tap("escape")
check.within(1, "skipped", function() return cinema.state.current == nil end)
check.expect(game_state().zoom == 1, "a skip sets the zoom back to 1: " .. game_state().zoom)
