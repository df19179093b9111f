-- A helper a behaviour starts in its entity's group with util.helper
-- restarts with the behaviour on each reload: after three saves there is
-- still one "ears" task, not four.
local check = require("lib.check")

local function wall_within(seconds, what, pred)
  local t0 = os.time()
  while not pred() do
    if os.time() - t0 > seconds then error(what .. ": not within " .. seconds .. " s (wall clock)", 2) end
    wait()
  end
end
local function count(name)
  local n = 0
  for _, t in ipairs(weft.tasks()) do
    if t.name == name then n = n + 1 end
  end
  return n
end
local function version(name)
  for _, m in ipairs(weft.modules()) do
    if m.name == name then return m.version end
  end
end

check.skip_intro()
local e = spawn_entity("guard", tile(30, 31), "listener", "down")
e.group:start("ai.listener", e)
wait()
check.expect(count("ears") == 1, "one ears task")
for v = 2, 4 do
  print(("SAVE scripts/ai/listener.lua tests/demo/live/edits/listener_v%d.lua"):format(v))
  wall_within(20, "ai.listener reloads to v" .. v, function() return version("ai.listener") == v end)
  wait()
  check.expect(count("ears") == 1, "still one ears task after save " .. (v - 1) .. " (" .. count("ears") .. ")")
end
