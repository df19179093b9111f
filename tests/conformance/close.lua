-- to-be-closed variables: order, errors, coroutine.close.
local log = {}
local function closer(name, fail)
  return setmetatable({}, {__close = function(_, err)
    log[#log + 1] = name .. ":" .. tostring(err)
    if fail then error(fail, 0) end
  end})
end
do
  local a <close> = closer("a")
  local b <close> = closer("b")
end
print(table.concat(log, " ")) log = {}

print(pcall(function()
  local a <close> = closer("a")
  local b <close> = closer("b", "b failed")
  error("body failed", 0)
end))
print(table.concat(log, " ")) log = {}

print(pcall(function()
  local a <close> = closer("a", "a failed")
  local b <close> = closer("b")
  return "returned"
end))
print(table.concat(log, " ")) log = {}

local function ret()
  local a <close> = closer("r")
  return 1, 2, 3
end
print(ret(), table.concat(log, " ")) log = {}

print(pcall(function() local x <close> = 42 end))
print(pcall(function() local x <close> = nil; local y <close> = false; return "ok" end))
print(pcall(function() local x <const> = 1; return x + 1 end))

-- coroutine.close with pending closes
local co = coroutine.create(function()
  local a <close> = closer("co-a")
  local b <close> = closer("co-b")
  coroutine.yield(1)
end)
coroutine.resume(co)
print(coroutine.close(co), coroutine.status(co))
print(table.concat(log, " ")) log = {}

local co2 = coroutine.create(function()
  local a <close> = closer("co2-a", "close error")
  coroutine.yield()
end)
coroutine.resume(co2)
print(coroutine.close(co2))
print(table.concat(log, " ")) log = {}

local co3 = coroutine.create(function() error("died") end)
print(coroutine.resume(co3))
print(coroutine.close(co3))
print(coroutine.close(coroutine.create(print)))

-- closing in a loop with break and goto
for i = 1, 3 do
  local c <close> = closer("loop" .. i)
  if i == 2 then break end
end
print(table.concat(log, " ")) log = {}

-- generic for closes its 4th value
local function iter()
  return function(_, i) if i < 2 then return i + 1 end end, nil, 0, closer("for-closing")
end
for i in iter() do log[#log + 1] = "i" .. i end
print(table.concat(log, " ")) log = {}
for i in iter() do if i == 1 then break end end
print(table.concat(log, " ")) log = {}

-- an error in a __close while unwinding another error
local ok, err = pcall(function()
  local a <close> = closer("x", "second")
  error("first", 0)
end)
print(ok, err, table.concat(log, " ")) log = {}
print("done")
