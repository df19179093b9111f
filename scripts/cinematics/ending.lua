-- Zone "idol": Wren takes the Moon Idol and dawn breaks over the keep.
local game = require("lib.game")

local M = { reload = "keep", from = "vault_open" }   -- --play previews it in that world state (lib/states.lua)

function M.start(scene)
  local hero = scene.hero
  local _ <close> = scene:lock_input()
  local _ <close> = finally(function()   -- whatever happens, the idol is taken
    set_tile(29, 3, "p")
    game.state.phase = "won"
    objective("The idol is yours. The keep is still guarded: try scripts/ while it runs.")
  end)

  wait(hero:move_to(scene.marks.idol, 30))
  set_tile(29, 3, "p")
  hero:play_anim("jump")
  wait(hero:say("Got it!", 1.5))
  wait(ambient("dawn", 3))
  wait(banner("The Moon Idol is yours", "Thanks for playing Moonwatch Keep.", 4))

  -- the alarm: two more guards come in through the gate and walk the courtyard
  for i, route in ipairs { { {24, 20}, {36, 20}, {36, 31}, {24, 31} }, { {36, 31}, {24, 31}, {24, 20}, {36, 20} } } do
    local g = spawn_entity("guard", scene.marks.hero_gate, "reinforcement" .. i, 270)
    for k, p in ipairs(route) do g.waypoints[k] = tile(p[1], p[2]) end
    g.group:start("ai.patrol", g)
  end
  wait(hero:say("...and now, the way out.", 2.5))
end

return M
