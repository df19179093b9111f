-- A script error shows the error overlay (message with file:line, the
-- traceback and where the task was spawned) while the game goes on.
local check = require("lib.check")

check.skip_intro()
local guard = entity("hall_west")
check.expect(#errors() == 0, "no errors before")

-- a broken behaviour in one guard's group
guard.group:spawn(function()
  wait(0.1)
  local lantern = nil
  return lantern.oil   -- line 13: indexing nil
end)

check.within(1, "the error is reported", function() return #errors() > 0 end)
local e = errors()[1]
check.expect(e.message:find("error_test.lua:13:", 1, true), "message names file:line: " .. e.message)
check.expect(e.trace:find("stack traceback", 1, true), "the trace has a traceback")
check.expect(e.trace:find("spawned at", 1, true), "the trace has the spawn site")
check.expect(overlay_shown("errors"), "the error overlay is shown")

-- the game goes on: guards still walk, the hero still moves
local function guards_at()
  local at = {}
  for _, g in ipairs(entities("guard")) do at[g] = g:position() end
  return at
end
local before = guards_at()
local p1 = player():position()
wait(hold("down", 1.0))
local walked = 0
for g, at in pairs(before) do walked = walked + check.dist(at, g:position()) end
check.expect(walked > 50, "the guards keep walking (" .. walked .. " units)")
check.expect(check.dist(p1, player():position()) > 20, "the hero keeps moving")
check.expect(overlay_shown("errors"), "the overlay stays up")
tap("f4")
wait()
check.expect(not overlay_shown("errors"), "F4 dismisses it")
