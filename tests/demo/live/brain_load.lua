-- A brain that fails to load when the game starts is reported in its
-- entity's name, with the red marker over it (issue 34, item 7); the
-- other guards start; the save that fixes it starts the brain and the
-- reports and markers go.
-- live: in a window
-- start with: scripts/ai/sentry.lua tests/demo/live/edits/sentry_broken.lua
local check = require("lib.check")

check.skip_intro()
local who = {}
for _, e in ipairs(errors()) do
  if e.message:find("sentry.lua:5:", 1, true) and e.who then who[e.who] = true end
end
check.expect(who.yard_guard and who.vault_guard, "each sentry's report names it")
check.expect(check.count_tasks("ai.patrol") > 3 and check.count_tasks("ai.sentry") == 0,
  "the patrols run, the sentries stand")
player():teleport(tile(38, 29))
wait(1)
check.expect(overlay_rects().marker, "a red marker stands over the yard guard")
screenshot("build/demo-test/brain_load.png")
print("SAVE scripts/ai/sentry.lua scripts/ai/sentry.lua")
check.wall_within(20, "the fixed save starts both sentries", function() return check.count_tasks("ai.sentry") == 2 end)
check.within(2, "the reports go", function() return #errors() == 0 end)
check.within(2, "and the marker", function() return not overlay_rects().marker end)
