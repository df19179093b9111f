-- The part of the script API written in Lua itself: waiting helpers built
-- from wait() and spawn(). Runs once per state with the API table as its
-- environment; argument errors point at the script's line (level 3).
local wait, spawn, type, error, tostring, floor, mtype, getmetatable =
  wait, spawn, type, error, tostring, math.floor, math.type, getmetatable
local gnow = weft._gnow
weft._gnow = nil

local function callable(f)
  if type(f) == 'function' then return true end
  local mt = getmetatable(f)
  return type(mt) == 'table' and mt.__call ~= nil
end

local function describe(v)
  if v ~= v then return 'NaN' end
  if type(v) == 'number' then return tostring(v) end
  return type(v)
end

local function check_fn(f, n, name)
  if not callable(f) then
    error(('bad argument #%d to \'%s\' (function expected, got %s)'):format(n, name, type(f)), 3)
  end
end

local function check_seconds(s, n, name, positive)
  if type(s) ~= 'number' or s ~= s or (positive and (s <= 0 or s == math.huge)) then
    error(('bad argument #%d to \'%s\' (%s expected, got %s)'):format(n, name,
      positive and 'positive finite number' or 'number', describe(s)), 3)
  end
end

function wait_frames(n)
  if type(n) ~= 'number' or n ~= n or n < 0 or n == math.huge or floor(n) ~= n then
    error(('bad argument #1 to \'wait_frames\' (whole number >= 0 expected, got %s)'):format(describe(n)), 2)
  end
  for _ = 1, n do wait() end
end

function wait_until(pred)
  check_fn(pred, 1, 'wait_until')
  local v = pred()
  while not v do
    wait()
    v = pred()
  end
  return v
end

function wait_while(pred)
  check_fn(pred, 1, 'wait_while')
  while pred() do wait() end
end

function after(s, fn, ...)
  check_seconds(s, 1, 'after')
  check_fn(fn, 2, 'after')
  return spawn(function(...)
    wait(s)
    return fn(...)
  end, ...)
end

-- Runs k at start + k*s on the task's group clock; when several periods
-- fall into one frame, fn runs once and the schedule skips ahead.
function every(s, fn, ...)
  check_seconds(s, 1, 'every', true)
  check_fn(fn, 2, 'every')
  return spawn(function(...)
    local start, k = gnow(), 1
    while true do
      wait(start + k * s - gnow())
      fn(...)
      k = floor((gnow() - start) / s + 1e-9) + 1
    end
  end, ...)
end
