-- What the boot script, the cinematics and the tests share. Runtime state
-- lives in persist() tables, so it survives a reload of this file.
local M = {}

M.state = persist("game.state", {
  phase = "loading",   -- "loading", "intro", "play", then "won"
  checkpoint = nil,    -- where Wren goes back to when caught (a position)
  caught = 0,          -- how many times a guard caught Wren
})

local signals = persist("game.signals", {})
signals.ready = signals.ready or signal("level ready")       -- set once the level is built
signals.playing = signals.playing or signal("player has control") -- set after the intro
M.ready = signals.ready
M.playing = signals.playing

-- A new game: the boot script calls it first, at the start and after a
-- soft reset (Ctrl-R), which keeps persist() tables as a save does.
function M.new_game()
  M.state.phase, M.state.checkpoint, M.state.caught = "loading", nil, 0
  M.ready:reset()
  M.playing:reset()
end

return M
