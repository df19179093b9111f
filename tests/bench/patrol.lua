-- The W0 and W1 task bodies. weft (through require), the floor program and
-- the pure-Lua scheduler load this same file; each gives it its own `wait`.
-- `e` is the task's entity: a table the game owns ({n = 0}); `e.n` counts
-- the task's resumes, so the three implementations can be checked against
-- each other.
local wait = wait

local M = {}

-- W1 patrol: sleep 0.25 .. 0.55 s between steps.
function M.w1(e, i)
  while true do
    e.n = e.n + 1
    wait(0.25 + (i % 7) * 0.05)
  end
end

-- W0 every frame: the raw cost of a resume.
function M.w0(e)
  while true do
    e.n = e.n + 1
    wait()
  end
end

return M
