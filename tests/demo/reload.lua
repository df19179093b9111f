-- Hot reload while the game runs (driven by tests/demo/reload_saves.sh, which edits
-- a copy of scripts/ai/patrol.lua when this script prints a step line):
--   1. a save with a syntax error: the overlay shows file:line, the old
--      code keeps running;
--   2. a good save: the patrol module (and ai.sentry, which requires it)
--      reload; every guard restarts on the new code with its state table,
--      the panel drops the syntax error by itself (no F4) and keeps the
--      error of another module; the reload note shows beside the error
--      panel, F1 and F2, none covering another (build/demo-test/reload_all.png).
-- Waits on the wall clock (os.time), since headless frames run unpaced.
local check = require("lib.check")

local function module(name)
  for _, m in ipairs(weft.modules()) do
    if m.name == name then return m end
  end
end

check.skip_intro()
local guard = entity("gate_guard")
guard.note = "kept across reloads"
local v1 = module("ai.patrol").version
check.expect(module("ai.patrol").tasks == 8, "eight guards patrol")

print("STEP break")      -- run.sh saves patrol.lua with a syntax error
check.wall_within(20, "the reload error is shown", function() return #errors() > 0 end)
local e = errors()[#errors()]
check.expect(e.message:find("ai/patrol.lua:%d+:"), "the error names ai/patrol.lua:line: " .. e.message)
check.expect(module("ai.patrol").version == v1, "nothing changed")
check.expect(module("ai.patrol").tasks == 8, "the old code keeps running")
local at = guard:position()
wait(2)
check.expect(check.dist(at, guard:position()) > 0 or guard:mood() == "calm", "the guard still patrols")

-- an error of another module (lib.util), raised in the well guard's group
local util = require("lib.util")
entity("well_guard").group:spawn(function() wait(0.1) return util.toward(nil, guard, 5) end)
check.within(1, "the lib.util error is reported", function() return #errors() == 2 end)
check.expect(errors()[2].who == "well_guard" and errors()[2].module == "lib.util",
  "the second report names well_guard and lib.util: " .. errors()[2].message)
check.expect(errors()[1].module == "ai.patrol", "the first belongs to ai.patrol")

print("STEP fix")        -- run.sh saves patrol.lua with SPEED = 41
check.wall_within(20, "the good save reloads", function() return module("ai.patrol").version > v1 end)
wait()
check.expect(require("ai.patrol").SPEED == 41, "the live module has the new value")
check.expect(#errors() == 1 and errors()[1].module == "lib.util",
  "the clean reload of ai.patrol cleared its report and kept lib.util's (" .. #errors() .. " left)")
check.expect(overlay_shown("errors"), "the panel shows the other report")
tap("f1")
tap("f2")
local r = overlay_rects()
for _, name in ipairs { "errors", "tasks", "modules", "graph", "reload_note" } do
  check.expect(r[name], name .. " is drawn")
end
for na, a in pairs(r) do
  for nb, b in pairs(r) do
    check.expect(na == nb or na == "marker" or nb == "marker" or
      not (a.x < b.x + b.w and b.x < a.x + a.w and a.y < b.y + b.h and b.y < a.y + a.h),
      na .. " and " .. nb .. " overlap")
  end
end
screenshot("build/demo-test/reload_all.png")
tap("f4")
wait()
check.expect(not overlay_shown("errors"), "F4 dismisses the rest")
check.expect(module("ai.sentry").version > 1, "ai.sentry, which requires ai.patrol, reloaded too")
check.expect(module("ai.patrol").tasks == 8 and module("ai.patrol").old == 0, "every guard runs the new code")
check.expect(entity("gate_guard") == guard and guard.note == "kept across reloads", "the state table is kept")
check.expect(guard.leg ~= nil, "the guard remembers its leg")
local before = guard:position()
wait(3)
check.expect(check.dist(before, guard:position()) > 5, "the guard walks on after the reload")
print("reload: ai.patrol v" .. module("ai.patrol").version .. ", guards back on patrol")
