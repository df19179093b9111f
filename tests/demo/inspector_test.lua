-- The F1 inspector shows names whole (no "zone vaul...") and, when the
-- tasks do not fit, scrolls with PgUp/PgDn to the one you look for.
local check = require("lib.check")

check.skip_intro()
tap("f1")
wait()
local function find(lines, text)
  for _, l in ipairs(lines) do
    if l:find(text, 1, true) then return l end
  end
end
local lines = overlay_text("tasks")
check.expect(#lines > 0, "the inspector lists tasks")
local zone_line = find(lines, "zone vault_door")
check.expect(zone_line and zone_line:find("^zone vault_door +zone vault_door "),
  "the zone task's who and name are whole:\n" .. table.concat(lines, "\n"))
for _, l in ipairs(lines) do
  check.expect(not l:find("^%S*%.%.%.") and not l:find("^%S+ %S*%.%.%."), "no who or task name is cut: " .. l)
end

-- fifty more tasks: the last one is off the list until PgDn
local crowd = group { name = "crowd" }
for i = 1, 50 do crowd:spawn(function() wait(math.huge) end).name = "waiter " .. i end
local last = crowd:spawn(function() wait(math.huge) end)
last.name = "the one I look for"
wait()
check.expect(not find(overlay_text("tasks"), "the one I look for"), "it does not fit at first")
local seen = false
for _ = 1, 10 do
  tap("pagedown")
  wait()
  if find(overlay_text("tasks"), "the one I look for") then seen = true break end
end
check.expect(seen, "PgDn scrolls to it")
for _ = 1, 10 do tap("pageup") wait() end
check.expect(find(overlay_text("tasks"), "zone vault_door"), "PgUp scrolls back to the top")
screenshot("build/demo-test/inspector.png")
crowd:cancel()
