local M = {}
function M.tick(n)
  local v = "one"
  return v
end
return M
