local M = {}
function M.start(e) while true do e.n = (e.n or 0) + 1 wait(0.1) end end
return M
