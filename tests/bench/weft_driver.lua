-- The weft side of the bench: run by `weft-bench` as the root task with
-- weft_run_file. BENCH (set by the harness in the script API) says which
-- workload and how many tasks; this script puts its counters back there.
--
-- Frame 0: the entities are made (they belong to the game, so the harness
-- takes its memory baseline after this). Frame 1: the tasks are spawned.
local B = BENCH
local N, w = B.n, B.workload
local E = {}
for i = 1, N do E[i] = {n = 0} end

-- ops: what the workload counts per unit of work (see README.md).
function B.count()
  local s = 0
  for i = 1, #E do s = s + E[i].n end
  return s
end

wait()

local P = require "patrol"
local huge = math.huge

local function pairs_of(consumer, producer, make)
  for j = 1, N // 2 do
    local shared = make()
    spawn(consumer, E[j], shared)
    spawn(producer, shared)
  end
end

if w == "W0" or w == "W1" then
  local body = w == "W0" and P.w0 or P.w1
  for i = 1, N do spawn(body, E[i], i) end
  wait(huge)

elseif w == "W2" then
  -- fan-out: N tasks wait on one signal fired every frame
  local s = signal()
  local function fan(e)
    local wait = wait
    while true do
      wait(s)
      e.n = e.n + 1
    end
  end
  for i = 1, N do spawn(fan, E[i]) end
  while true do
    wait()
    s:fire()
  end

elseif w == "W3p" then
  -- pairs: the consumer hands the producer a fresh future and waits on it;
  -- the producer resolves it once a frame
  pairs_of(function(e, box)
    local wait, future = wait, future
    while true do
      local f = future()
      box.f = f
      e.n = e.n + wait(f)
    end
  end, function(box)
    local wait = wait
    while true do
      wait()
      box.f:resolve(1)
    end
  end, function() return {} end)
  wait(huge)

elseif w == "W3w" then
  -- wait{...} of 10 futures, all resolved by the producer once a frame
  pairs_of(function(e, box)
    local wait, future = wait, future
    local list = {}
    while true do
      for k = 1, 10 do list[k] = future() end
      box.list = list
      wait(list)
      e.n = e.n + 1
    end
  end, function(box)
    local wait = wait
    while true do
      wait()
      local list = box.list
      for k = 1, 10 do list[k]:resolve(k) end
    end
  end, function() return {} end)
  wait(huge)

elseif w == "W3f" then
  -- first{f, timeout}: the future wins (resolved next frame), the 5 s
  -- timer is dropped
  pairs_of(function(e, box)
    local wait, future, first = wait, future, first
    while true do
      local f = future()
      box.f = f
      if wait(first{f, 5}) == 1 then e.n = e.n + 1 end
    end
  end, function(box)
    local wait = wait
    while true do
      wait()
      box.f:resolve(1)
    end
  end, function() return {} end)
  wait(huge)

elseif w == "W4f" or w == "W4c" or w == "W4a" or w == "W4g" then
  -- churn beside N sleeping tasks: spawn and finish (W4f), or spawn and
  -- cancel (W4c), B.churn tasks a frame; W4a and W4g are W4f where each
  -- task makes one object with a metatable, without and with a __gc (its
  -- finalizer then runs as a task too)
  local function sleeper() wait(huge) end
  local function noop() end
  local mt = w == "W4g" and {__gc = function(o) o.done = true end} or {}
  local function make() setmetatable({}, mt) end
  local body = (w == "W4a" or w == "W4g") and make or noop
  for i = 1, N do spawn(sleeper) end
  local churn, h, ops = B.churn, {}, 0
  while true do
    if w ~= "W4c" then
      for _ = 1, churn do spawn(body) end
    else
      for k = 1, churn do h[k] = spawn(sleeper) end
      for k = churn, 1, -1 do h[k]:cancel() end
    end
    ops = ops + churn
    B.ops = ops
    wait()
  end

elseif w == "W5b" or w == "W5u" then
  -- channels: each producer sends 8 values a frame to its consumer through
  -- a bounded (capacity 4) or unbounded channel
  pairs_of(function(e, ch)
    while true do
      e.n = e.n + ch:recv()
    end
  end, function(ch)
    local wait = wait
    while true do
      for _ = 1, 8 do ch:send(1) end
      wait()
    end
  end, function() return channel(w == "W5b" and 4 or nil) end)
  wait(huge)

else
  error("unknown workload " .. tostring(w))
end
