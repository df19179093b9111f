-- The pure-Lua side of the bench: W0, W1 and W4 on the scheduler of
-- purelua.lua, mirroring weft_driver.lua. Called with (S, P, B): the
-- scheduler, the patrol bodies and the parameters. Makes the entities
-- (before the harness's memory baseline) and returns the function that
-- spawns the tasks on frame 1.
local S, P, B = ...
local spawn, wait = S.spawn, S.wait
local N, w = B.n, B.workload
local E = {}
for i = 1, N do E[i] = {n = 0} end

function B.count()
  local s = 0
  for i = 1, #E do s = s + E[i].n end
  return s
end

return function()
  local huge = math.huge
  if w == "W0" or w == "W1" then
    local body = w == "W0" and P.w0 or P.w1
    for i = 1, N do spawn(body, E[i], i) end
  elseif w == "W4f" or w == "W4c" then
    local function sleeper() wait(huge) end
    local function noop() end
    for _ = 1, N do spawn(sleeper) end
    local cancel, churn = S.cancel, B.churn
    spawn(function()
      local h, ops = {}, 0
      while true do
        if w == "W4f" then
          for _ = 1, churn do spawn(noop) end
        else
          for k = 1, churn do h[k] = spawn(sleeper) end
          for k = churn, 1, -1 do cancel(h[k]) end -- newest first: found at once
        end
        ops = ops + churn
        B.ops = ops
        wait()
      end
    end)
  else
    error("no pure-Lua version of " .. tostring(w))
  end
end
