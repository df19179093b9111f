-- weft-demo --play cinematics.vault: the intro is skipped and the vault
-- cinematic plays at once, with Wren in its zone (run by tests/demo/run.sh).
local check = require("lib.check")
local cinema = require("lib.cinema")

check.within(3, "the level loads", function() return game_state().frame > 1 and not overlay_shown("loading") end)
check.within(1, "the vault cinematic plays", function() return cinema.state.current == "cinematics.vault" end)
check.expect(not cinema.state.played["cinematics.intro"] or cinema.state.last.name ~= "cinematics.intro"
  or cinema.state.last.status == "cancelled", "the intro was skipped")
check.within(1, "Wren stands in the vault door's zone", function() return in_zone("vault_door") end)
check.expect(entity("captain") == nil and door_open("gate"),
  "in the world real play has then (vault.lua's from = \"after_intro\"): the captain in bed, the gate open")
check.within(15, "it plays to its end", function() return cinema.state.current == nil end)
check.expect(cinema.state.last.name == "cinematics.vault" and cinema.state.last.status == "done",
  "the vault cinematic ended by itself")
check.expect(door_open("vault"), "it opened the vault door")
check.within(1, "the player has the keep", function() return not input_locked() end)
