-- An entity destroyed while a script waits on one of its verbs: the
-- script's error names the line that asked (file:line), so the report
-- belongs to that module and a clean reload of it clears it.
local check = require("lib.check")

check.skip_intro()
local extra = spawn_entity("guard", tile(30, 31), "extra", "down")
local t = groups.cutscenes:spawn(function()
  wait(extra:move_to(tile(22, 22), 10))          -- the line the report names
end)
wait(0.3)
destroy(extra)
check.within(1, "the waiting script fails", function() return t.status == "failed" end)
local e = errors()[#errors()]
check.expect(e and e.message:find("destroyed_test.lua:9: extra was destroyed", 1, true),
  "the report names the line: " .. tostring(e and e.message))
