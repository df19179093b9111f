-- Reports name the designer's line: a task a helper of lib/ spawns
-- (util.helper, cinema.play) is spawned at the line that called the
-- helper, not inside it; a cinematic's report names the cinematic.
local check = require("lib.check")
local util = require("lib.util")
local cinema = require("lib.cinema")

check.skip_intro()
local e = entity("gate_guard")
util.helper(e, "ears", function() wait(0.1) error("deaf") end)   -- line 10
check.within(2, "the helper's error is reported", function() return #errors() > 0 end)
local r = errors()[#errors()]
check.expect(r.message:find("^ears: tests/demo/reports_test%.lua:10: deaf"), "it names the helper: " .. r.message)
check.expect(r.trace:find("spawned at tests/demo/reports_test.lua:10", 1, true),
  "spawned at the line that called util.helper: " .. r.trace)
check.expect(not r.trace:find("lib/util.lua", 1, true), "not inside util.helper: " .. r.trace)
tap("f4")

spawn(cinema.play, "cinematics.caught", { guard = entity("well_guard"), hero = player() })
check.within(2, "a cinematic plays", function() return cinema.state.current == "cinematics.caught" end)
local found
for _, t in ipairs(weft.tasks()) do
  if t.name == "cinematics.caught" then found = t end
end
check.expect(found and found.who == "cinematics.caught", "its task goes by the cinematic's name: " .. tostring(found and found.who))
check.expect(found.spawned:find("tests/demo/reports_test.lua:19", 1, true), "spawned where play was asked: " .. found.spawned)
tap("escape")
check.within(2, "skipped", function() return cinema.state.current == nil end)
