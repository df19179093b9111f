-- A test cinematic that fails a second in, fixed: it now holds the
-- scene until skipped, so a copy started by itself would lock the player
-- out.
local M = {}

function M.start(scene)
  local _ <close> = scene:lock_input()
  wait(1)
  wait(scene.hero:say("Fixed.", math.huge))
end

return M
