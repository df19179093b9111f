-- The developer keys: P pauses the game (guards freeze), T cycles slow
-- motion, F1 shows the task inspector fed by weft.tasks().
local check = require("lib.check")

check.skip_intro()
local function guards_at()
  local at = {}
  for _, g in ipairs(entities("guard")) do at[g] = g:position() end
  return at
end
local function walked(since)
  local d = 0
  for g, at in pairs(since) do d = d + check.dist(at, g:position()) end
  return d
end

tap("p")
wait()
check.expect(game_state().paused, "P pauses")
local at = guards_at()
wait(1)
check.expect(walked(at) == 0, "guards stand still while paused")
tap("p")
wait()
check.expect(not game_state().paused, "P resumes")

tap("t")
wait()
check.expect(game_state().time_scale == 0.5, "T slows time to half")
local a = guards_at()
wait(1)
local slow = walked(a)
tap("t")
wait()
tap("t")
wait()
check.expect(game_state().time_scale == 1, "T cycles back to full speed")
local c = guards_at()
wait(1)
local full = walked(c)
check.expect(slow > 10 and full > slow * 1.4, ("slow motion is slower (%.0f vs %.0f units/s)"):format(slow, full))

tap("f1")
wait()
check.expect(overlay_shown("tasks"), "F1 shows the task inspector")
local seen = {}
for _, t in ipairs(weft.tasks()) do
  -- g:start runs the module in a group of its own under the entity's
  if t.name == "ai.patrol" and t.where ~= "" then seen[t.task.group.parent.name] = t.where end
end
for _, name in ipairs { "gate_guard", "well_guard", "hall_west", "hall_east" } do
  check.expect(seen[name], "the inspector lists " .. name .. "'s patrol task and where it waits")
end
print(("keys: guards walked %.0f units in 1 s at half speed, %.0f at full"):format(slow, full))
