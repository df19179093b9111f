-- Ctrl-R brings back a game whose boot script stopped, without a save
-- (the boot script here fails only the first time it runs), and resets
-- a game that runs: the level is built anew, the brains start again,
-- the intro plays again, with no report left behind.
-- live: in a window
-- start with: scripts/main_real.lua scripts/main.lua
-- start with: scripts/main.lua tests/demo/live/edits/main_crash_once.lua

local function expect(v, what) if not v then error("expected: " .. what, 2) end end
local function within(seconds, what, pred)
  local t = spawn(wait_until, pred)
  local ok = pcall(wait, timeout(t, seconds))
  t:cancel()
  if not ok then error(what .. ": not within " .. seconds .. " s", 2) end
end
local function ctrl_r()
  key_down("left ctrl")
  tap("r")
  wait()
  key_up("left ctrl")
end

wait(0.5)
expect(game_state().boot == "failed", "the boot script stopped")
expect(#entities() == 0, "no level")
ctrl_r()
within(5, "Ctrl-R: the level is built", function() return #entities() > 0 end)
expect(game_state().resets == 1, "one reset (" .. game_state().resets .. ")")
local check = require("lib.check")
local cinema = require("lib.cinema")
within(5, "the intro plays", function() return cinema.state.current == "cinematics.intro" end)
check.expect(#errors() == 0, "the panel is clear")
local guard = entity("gate_guard")
wait(0.5)
tap("escape")
check.within(2, "control returns", function() return not input_locked() end)
player():teleport(tile(33, 22))
local brains = check.count_tasks("ai.patrol")

ctrl_r()
check.within(5, "Ctrl-R again: the intro plays again", function()
  return game_state().resets == 2 and cinema.state.current == "cinematics.intro"
end)
check.expect(not guard:alive(), "the old guard is gone")
check.expect(entity("gate_guard") and entity("gate_guard"):alive(), "a new gate guard stands")
check.expect(check.dist(player():position(), tile(33, 22)) > 16, "Wren starts over")
check.expect(check.count_tasks("ai.patrol") == brains,
  "each patroller has one brain (" .. check.count_tasks("ai.patrol") .. " for " .. brains .. ")")
check.expect(#errors() == 0, "the panel is clear: " .. tostring(errors()[1] and errors()[1].message))
