-- A test cinematic (tests/demo/live/cast.lua): the guard of the scene
-- table walks to Wren and talks; the yard guard, fetched by the scene
-- itself, turns to look. scene.fail makes it fail half way.
local M = {}

function M.start(scene)
  local hero, guard = scene.hero, scene.guard
  local _ <close> = scene:lock_input()
  wait(guard:move_to(mark("courtyard"), 60))
  wait(entity("yard_guard"):face(guard))
  if scene.fail then error("the scene fails half way") end
  wait(guard:say("Evening.", math.huge))
end

return M
