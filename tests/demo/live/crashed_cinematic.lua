-- A cinematic that failed is over (issue 34, repro 1): played from the
-- console, it locks the input, waits a second and fails. Its cleanups
-- ran: the input is free, no cinematic is playing. Saving the fixed
-- module does not start it by itself; played again it goes through the
-- cinematic player: it is the cinematic playing and Escape skips it.
-- live: in a window
local check = require("lib.check")
local cinema = require("lib.cinema")

local function version(name)
  for _, m in ipairs(weft.modules()) do
    if m.name == name then return m.version end
  end
end

local function console(line)
  tap("`")
  wait()
  console_input(line)
  tap("return")
  wait()
  tap("escape")
  wait()
end

check.skip_intro()
console('play("cinematics.tmpfail")')
check.within(2, "the cinematic plays", function()
  return cinema.state.current == "cinematics.tmpfail" and input_locked()
end)
check.within(3, "it fails", function()
  for _, e in ipairs(errors()) do
    if e.message:find("boom") then return true end
  end
end)
check.expect(cinema.state.current == nil, "no cinematic is playing after the failure")
check.expect(not input_locked(), "the input is free after the failure")
check.within(2, "the letterbox goes", function() return not overlay_shown("letterbox") end)

print("SAVE scripts/cinematics/tmpfail.lua tests/demo/live/edits/tmpfail_fixed.lua")
check.wall_within(20, "cinematics.tmpfail reloads", function() return version("cinematics.tmpfail") == 2 end)
wait(1.5)
check.expect(check.count_tasks("cinematics.tmpfail") == 0,
  "the failed cinematic did not start by itself (" .. check.count_tasks("cinematics.tmpfail") .. " tasks)")
check.expect(not input_locked() and cinema.state.current == nil, "the input stays free")

console('play("cinematics.tmpfail")')
check.within(3, "played again, it is the cinematic playing", function()
  return cinema.state.current == "cinematics.tmpfail" and game_state().dialogue
    and game_state().dialogue.text == "Fixed."
end)
check.expect(check.count_tasks("cinematics.tmpfail") == 1, "one copy plays")
tap("escape")
check.within(2, "Escape skips it", function()
  return cinema.state.current == nil and not input_locked()
end)
check.expect(cinema.state.last.status == "cancelled", "it ended skipped (" .. tostring(cinema.state.last.status) .. ")")
