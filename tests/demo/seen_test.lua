-- e.saw_player is set while the guard sees the player: a task that starts
-- waiting on it while Wren already stands in the light hears it at once;
-- once Wren is out of sight, a new wait waits for the next sighting.
local check = require("lib.check")
local util = require("lib.util")

check.skip_intro()
local guard = entity("well_guard")
guard.group:cancel()                          -- no patrol: the guard stands
guard:stop()
wait(guard:face(guard:facing()))
check.within(2, "the guard's lantern lights a spot ahead", function()
  return guard:can_see(util.ahead(guard, 40))
end)
player():teleport(util.ahead(guard, 40))
wait(0.3)                                     -- seen for a while already
check.expect(guard:can_see(player()), "the guard sees Wren")
local heard = guard.group:spawn(function() return wait(first { guard.saw_player, 1 }) end)
check.expect(wait(heard) == 1, "a wait that starts while Wren is seen returns at once")
local who = wait(guard.saw_player)
check.expect(who == player(), "it gives the player")

player():teleport(mark("hero_gate"))          -- out of sight
wait(0.2)
check.expect(not guard:can_see(player()), "Wren is out of sight")
local late = guard.group:spawn(function() return wait(first { guard.saw_player, 1 }) end)
check.expect(wait(late) == 2, "out of sight, a new wait waits")
