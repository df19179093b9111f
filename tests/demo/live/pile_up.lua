-- A helper that slowly piles up tasks is flagged (issue 34, repro 5): a
-- brain leaves one task behind a frame; within a few seconds of steady
-- growth the panel and the console name the spawn's file and line once,
-- and F1 grouped by spawn site (G) shows the place with its count. The
-- fixed save clears the warning.
-- live: in a window
local check = require("lib.check")

local function pile_ups()
  local n, msg = 0, nil
  for _, e in ipairs(errors(true)) do
    if e.warning == "pile-up" then n, msg = n + 1, e.message end
  end
  return n, msg
end

check.skip_intro()
local e = spawn_entity("guard", tile(30, 31), "leaky", "down")
e.group:start("ai.leaky", e)
check.within(15, "the growing spawn site is named", function() return pile_ups() == 1 end)
local _, msg = pile_ups()
check.expect(msg:find("leaky%.lua:6") and msg:find("and growing"), "it names the spawn's line: " .. msg)
local said
for _, l in ipairs(console_lines()) do
  if l:find("leaky.lua:6", 1, true) and l:find("growing", 1, true) then said = l end
end
check.expect(said, "the console says it too")
tap("f1")
wait(0.1)
tap("g")
wait(0.1)
local lines = overlay_text("tasks")
local row
for _, l in ipairs(lines) do if l:find("leaky.lua:6", 1, true) then row = l end end
check.expect(row and row:find("growing"), "F1 by site lists the place as growing: " .. tostring(row))
local count = tonumber(row:match("^%s*(%d+)"))
check.expect(count and count > 100, "with its count: " .. tostring(count))
tap("f2")
wait(0.2)
screenshot("build/demo-test/pile_up.png")
wait(2)
check.expect(pile_ups() == 1, "named once, not again as it grows")
print("SAVE scripts/ai/leaky.lua tests/demo/live/edits/leaky_fixed.lua")
check.wall_within(20, "the fix clears the warning", function() return pile_ups() == 0 end)
check.within(2, "and the pile is gone", function()
  for _, l in ipairs(overlay_text("tasks")) do
    local n = l:find("leaky.lua", 1, true) and tonumber(l:match("^%s*(%d+)"))
    if n and n > 2 then return false end
  end
  return true
end)
tap("g")
tap("f1")
tap("f2")
