-- The boot script of tests/demo/live/reset_keys.lua: it fails the first
-- time it runs (a state no save fixes), then runs the game's own, kept
-- as main_real.lua.
current().name = "boot"
local once = persist("test.crash_once", {})
if not once.crashed then
  once.crashed = true
  error("the boot script fails the first time")
end
local here = debug.getinfo(1, "S").source:sub(2)
return dofile((here:gsub("main%.lua$", "main_real.lua")))
