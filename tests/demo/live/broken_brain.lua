-- A brain with a typo when the game starts: its guard stands without
-- one and the error shows; the save that fixes the file starts it within
-- a second, and the error clears (checked headless on the wall clock).
local check = require("lib.check")

check.skip_intro()
local e = spawn_entity("guard", tile(30, 31), "lookout", "down")
local ok, err = pcall(e.group.start, e.group, "ai.lookout", e)
check.expect(not ok and tostring(err):find("lookout.lua:6:"), "the start fails at the typo: " .. tostring(err))
check.expect(check.count_tasks("ai.lookout") == 0, "no brain while broken")
check.expect(#weft.reload_errors() == 1, "the error is shown")
wait(0.5)
print("SAVE scripts/ai/lookout.lua tests/demo/live/edits/lookout_fixed.lua")
-- headless, frames run as fast as they go: the save is timed on the wall
-- clock (whole seconds: within a second, give or take the tick)
check.wall_within(2, "the fixed lookout starts", function() return check.count_tasks("ai.lookout") == 1 end)
check.expect(e.watching == true, "its brain runs")
check.expect(#weft.reload_errors() == 0, "the error is gone")
