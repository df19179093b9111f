-- A walker for tests/windows/scene: steps on a timer, then fires a signal.
local M = {}

function M.describe(t)
  return ("%.2f s (%s)"):format(t, tostring(t > 1))
end

function M.start(name, arrived)
  for step = 1, 3 do
    wait(0.4)
    print(("%d  %s takes step %d"):format(frame(), name, step))
  end
  arrived:fire(name)
  return name
end

return M
