-- Walking into the garden plays its cinematic (the sage's advice) once:
-- input locked while it plays, dialogue shown, control back at the end.
local check = require("lib.check")
local cinema = require("lib.cinema")

check.skip_intro()
-- walk in through the gap in the courtyard's east wall
player():teleport(tile(40, 22.5))
wait(0.2)
check.expect(not in_zone("garden"), "the hero starts outside the garden")
wait(hold("right", 0.8))
check.within(2, "the garden cinematic starts", function() return cinema.state.current == "cinematics.sage" end)
check.expect(in_zone("garden"), "the hero is in the garden")
check.expect(input_locked(), "input is locked during the cinematic")
check.within(10, "the sage speaks", function() return overlay_shown("dialogue") end)
check.within(60, "the cinematic ends", function() return cinema.state.current == nil end)
check.expect(cinema.state.last.name == "cinematics.sage" and cinema.state.last.status == "done",
  "the sage cinematic ran to its end")
check.expect(not input_locked(), "control returns to the player")

-- leaving and coming back does not play it again
player():teleport(tile(40, 22.5))
wait(0.3)
wait(hold("right", 0.8))
wait(0.5)
check.expect(cinema.state.current ~= "cinematics.sage", "the zone cinematic plays once (now: " .. tostring(cinema.state.current) .. ")")
check.expect(cinema.state.played["cinematics.sage"] == 1, "played exactly once")
