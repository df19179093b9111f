-- Tables with string keys (pairs order), closures sharing upvalues,
-- coroutines inside a task, math.random's state.
math.randomseed(42)
local t = {}
for i = 1, 20 do t["k" .. i] = i end
t.k5, t.k9 = nil, nil
local count = 0
local function inc() count = count + 1 return count end
local function get() return count end
local co = coroutine.wrap(function()
  for i = 1, 100 do coroutine.yield(i * i) end
end)
for round = 1, 6 do
  wait(0.1)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  print(round, table.concat(keys, ","), inc(), get(), co(), math.random(1000), frame())
end
