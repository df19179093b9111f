-- A test cinematic without reload = "keep": a save restarts it.
local M = {}

function M.start(scene)
  local _ <close> = scene:lock_input()
  scene.takes = (scene.takes or 0) + 1
  wait(pan_camera(scene.marks.courtyard, 0.5))
  wait(scene.hero:say("Take two.", math.huge))
end

return M
