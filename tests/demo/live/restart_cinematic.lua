-- A save restarts a playing cinematic (a module without reload = "keep")
-- and it stays the cinematic playing: cinema.play keeps waiting for it,
-- the cinematic state names it, Escape skips it, and another cinematic
-- waits for it instead of starting over it.
local check = require("lib.check")
local cinema = require("lib.cinema")

check.skip_intro()
local scene = { }
local result
spawn(function() result = cinema.play("cinematics.long_take", scene) end)
check.within(2, "the take plays", function()
  local d = game_state().dialogue -- one reading: the task may be preempted between two
  return d and d.text == "Take one."
end)
print("SAVE scripts/cinematics/long_take.lua tests/demo/live/edits/long_take_v2.lua")
check.wall_within(20, "the saved cinematic restarts", function()
  local d = game_state().dialogue
  return d and d.text == "Take two."
end)
check.expect(scene.takes == 2, "the scene table is the same (takes " .. tostring(scene.takes) .. ")")
check.expect(result == nil, "cinema.play still waits (got " .. tostring(result) .. ")")
check.expect(cinema.state.current == "cinematics.long_take",
  "the current cinematic is still it (" .. tostring(cinema.state.current) .. ")")
check.expect(input_locked(), "the input stays locked")
local other
spawn(function() other = cinema.play("cinematics.sage", { zone = zone("garden") }) end)
wait(0.5)
check.expect(cinema.state.current == "cinematics.long_take" and other == nil,
  "another cinematic waits for it")
tap("escape")
check.within(2, "Escape skips the restarted cinematic", function() return result ~= nil end)
check.expect(result == "cancelled", "it ends skipped (" .. tostring(result) .. ")")
check.within(2, "the waiting one plays next", function() return cinema.state.current == "cinematics.sage" end)
tap("escape")
check.within(2, "and is skipped too", function() return other ~= nil and cinema.state.current == nil end)
check.expect(not input_locked(), "the input is free again")
