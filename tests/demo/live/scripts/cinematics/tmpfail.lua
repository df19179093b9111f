-- A test cinematic that fails a second in (issue 34's repro).
local M = {}

function M.start(scene)
  local _ <close> = scene:lock_input()
  wait(1)
  error("boom")
end

return M
