-- Named world states: each puts the world as real play has it at one
-- point of the game, so a cinematic previewed on its own (weft-demo
-- --play, the console's play()) sees what real play sees. A cinematic
-- names the state it plays in (M.from = "after_intro"); --from NAME and
-- play(name, beat, from) choose another. A state may wait (a door
-- swinging open) before the scene starts.
local M = {}

-- The intro has played and the captain has gone to bed: he is gone, the
-- gate stands open.
function M.after_intro()
  local captain = entity("captain")
  if captain then captain:destroy() end
  if not door_open("gate") then wait(open_door("gate")) end
end

-- Wren has opened the vault: as after_intro, and the vault door open.
function M.vault_open()
  M.after_intro()
  if not door_open("vault") then wait(open_door("vault")) end
end

return M
