-- An entity owns a group: spawn one, give it a script, destroy it. Its
-- script is cancelled (its <close> cleanup runs) and the future it waited
-- on fails; the destroyed entity's table goes stale.
local check = require("lib.check")

check.skip_intro()
local e = spawn_entity("guard", tile(30, 31), "test_guard", 270)
check.expect(entity("test_guard") == e and e:alive(), "the new guard exists")
check.expect(e.group and e.saw_player, "it has a group and a saw_player signal")

local cleaned, walk = false, nil
local t = e.group:spawn(function()
  local _ <close> = finally(function() cleaned = true end)
  walk = e:move_to(tile(30, 20), 30)
  wait(walk)
end)
wait(0.5)
check.expect(check.dist(e:position(), tile(30, 31)) > 5, "it walks")
check.expect(t.status == "waiting" and walk.state == "pending", "its script waits on the walk")

e:destroy()
check.expect(t.status == "cancelled", "destroying it cancelled its script")
check.expect(cleaned, "the script's cleanup ran")
check.expect(walk.state == "failed", "the walk future failed, got " .. walk.state)
check.expect(not e:alive() and entity("test_guard") == nil, "the entity is gone")
local ok, err = pcall(e.position, e)
check.expect(not ok and tostring(err):find("destroyed"), "a verb on it is an error: " .. tostring(err))
