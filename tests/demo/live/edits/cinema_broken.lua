-- lib/cinema.lua with a typo (tests/demo/live/dead_boot.lua): the boot
-- script requires it and stops.
local M = {}

function M.busy(
  return M.state.current ~= nil
end

return M
