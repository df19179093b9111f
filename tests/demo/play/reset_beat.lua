-- weft-demo --play cinematics.sage, then reset("advice") in the console:
-- the game starts over and runs unseen up to the beat of the cinematic
-- --play plays, then plays on from there (run by tests/demo/run.sh).
local check = require("lib.check")
local cinema = require("lib.cinema")

check.within(10, "the sage's cinematic plays", function() return cinema.state.current == "cinematics.sage" end)
wait(1)
tap("`")
wait()
console_input('reset("advice")')
tap("return")
wait()
tap("escape")
local said = console_lines()
check.expect(said[#said] == "resetting to beat advice", "the console says so: " .. tostring(said[#said]))
check.within(1, "the game resets and runs unseen", function()
  return game_state().resets == 1 and game_state().fast_forward
end)
wait_until(function() return not game_state().fast_forward end)
check.expect(game_state().beat == "advice", "it stopped at the beat (" .. game_state().beat .. ")")
check.expect(cinema.state.current == "cinematics.sage", "in the sage's cinematic")
wait()
local d = game_state().dialogue
check.expect(d and d.text == "The guards see only what their lanterns light.",
  "the scene goes on from the beat: " .. tostring(d and d.text))
check.expect(#errors() == 0, "no report: " .. tostring(errors()[1] and errors()[1].message))
