-- A guard caught Wren: a word, a fade to black, and back to the last
-- checkpoint.
local game = require("lib.game")

local M = { reload = "keep" }

local lines = { "Got you, thief!", "Halt! Back you go.", "Not so fast!", "Caught you!" }

function M.start(scene)
  local hero, guard = scene.hero, scene.guard
  local _ <close> = scene:lock_input()
  local _ <close> = finally(function()   -- also when skipped: back to the checkpoint
    hero:teleport(game.state.checkpoint or mark("hero_gate"))
  end)

  game.state.caught = game.state.caught + 1
  hero:play_anim("shake")
  wait(guard:face(hero))
  wait(first { guard:say(lines[math.random(#lines)]), 2.5 })
  wait(fade_out(0.6))
  hero:teleport(game.state.checkpoint or mark("hero_gate"))
  wait(0.4)
  wait(fade_in(0.6))
end

return M
