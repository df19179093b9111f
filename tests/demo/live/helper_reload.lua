-- A helper a behaviour starts in its entity's group with util.helper
-- restarts with the behaviour on each reload: after three saves there is
-- still one "ears" task, not four.
local check = require("lib.check")

local function version(name)
  for _, m in ipairs(weft.modules()) do
    if m.name == name then return m.version end
  end
end

check.skip_intro()
local e = spawn_entity("guard", tile(30, 31), "listener", "down")
e.group:start("ai.listener", e)
wait()
check.expect(check.count_tasks("ears") == 1, "one ears task")
for v = 2, 4 do
  print(("SAVE scripts/ai/listener.lua tests/demo/live/edits/listener_v%d.lua"):format(v))
  check.wall_within(20, "ai.listener reloads to v" .. v, function() return version("ai.listener") == v end)
  wait()
  check.expect(check.count_tasks("ears") == 1, "still one ears task after save " .. (v - 1) .. " (" .. check.count_tasks("ears") .. ")")
end
