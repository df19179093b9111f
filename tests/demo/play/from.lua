-- weft-demo --play cinematics.sage --from vault_open: the world is set up
-- as lib/states.lua's vault_open says before the cinematic plays (run by
-- tests/demo/run.sh).
local check = require("lib.check")
local cinema = require("lib.cinema")

check.within(3, "the sage's cinematic plays", function() return cinema.state.current == "cinematics.sage" end)
check.expect(door_open("vault") and door_open("gate") and entity("captain") == nil,
  "in the world state --from named: the vault open, the captain gone")
tap("escape")
check.within(2, "skipped", function() return cinema.state.current == nil end)
