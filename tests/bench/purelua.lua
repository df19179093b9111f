-- The common pure-Lua approach, as a reference point: a table of
-- coroutines and a table of wake times, scanned every frame. `wait(s)` is
-- coroutine.yield(s). It follows weft's wake rule (now >= due - 1e-9;
-- wait() wakes next frame) so every implementation resumes the same tasks
-- on the same frames. It never removes a finished task from the scan
-- unless told (the W0/W1 bodies never finish), which only flatters it.
local create, resume, close = coroutine.create, coroutine.resume, coroutine.close

local S = {}
local cos, wake, n = {}, {}, 0
local now = 0

S.wait = coroutine.yield

-- Starts fn(...) and runs it up to its first wait, like weft's spawn.
-- Returns the coroutine, or nil when it finished at once.
function S.spawn(fn, ...)
  local co = create(fn)
  local ok, s = resume(co, ...)
  if not ok then error(s, 0) end
  if coroutine.status(co) == "dead" then return nil end
  n = n + 1
  cos[n], wake[n] = co, now + (s or 0)
  return co
end

-- Cancels: closes the coroutine and drops it from the scan (swap-remove).
function S.cancel(co)
  for i = n, 1, -1 do
    if cos[i] == co then
      cos[i], wake[i] = cos[n], wake[n]
      cos[n], wake[n] = nil, nil
      n = n - 1
      break
    end
  end
  close(co)
end

-- One frame: every task whose wake time has come is resumed.
function S.step(dt)
  now = now + dt
  local resumes = 0
  for i = 1, n do
    if now >= wake[i] - 1e-9 then
      local ok, s = resume(cos[i])
      if not ok then error(s, 0) end
      wake[i] = now + (s or 0)
      resumes = resumes + 1
    end
  end
  return resumes
end

function S.count() return n end

return S
