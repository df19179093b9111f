-- A cinematic casts its actors (issue 34, item 4): the guard in its scene
-- table and the yard guard it turns itself have their brains held for
-- the scene, so the patrol cannot walk the guard off mid-line; when the
-- scene ends (skipped here, then failing) their brains go on.
-- live: in a window
local check = require("lib.check")
local cinema = require("lib.cinema")

local function at(e, place) return check.dist(e:position(), place) < 4 end

check.skip_intro()
local guard, yard = entity("well_guard"), entity("yard_guard")
local result
spawn(function() result = cinema.play("cinematics.guard_talk", { guard = guard }) end)
check.within(1, "the scene holds the guard's brain", function() return guard.group.paused end)
check.within(8, "the guard walks to the scene's mark and talks", function()
  local d = game_state().dialogue
  return d and d.text == "Evening."
end)
check.expect(at(guard, mark("courtyard")), "the guard stands where the scene put it")
check.expect(yard.group.paused, "the yard guard, turned by the scene, is held too")
tap("f1")
wait(0.1)
screenshot("build/demo-test/cast.png")
tap("f1")
wait(2)
check.expect(at(guard, mark("courtyard")), "its patrol did not walk it off mid-line")
tap("escape")
check.within(2, "skipped", function() return result ~= nil end)
check.expect(not guard.group.paused and not yard.group.paused, "both brains go on after the scene")
check.within(10, "the guard walks its route again", function() return not at(guard, mark("courtyard")) end)

result = nil
spawn(function() result = cinema.play("cinematics.guard_talk", { guard = guard, fail = true }) end)
check.within(8, "the failing scene ends", function() return result ~= nil end)
check.expect(result == "failed", "it failed (" .. tostring(result) .. ")")
check.expect(not guard.group.paused and not yard.group.paused, "a failed scene lets its cast go too")
