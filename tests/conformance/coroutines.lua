-- Coroutines made inside a task: generators, wrap, status, errors, close,
-- yields across pcall, metamethods and iterators, nesting depth.
local function gen(n)
  return coroutine.wrap(function()
    for i = 1, n do coroutine.yield(i, i * i) end
    return "end"
  end)
end
local g = gen(3)
print(g()) print(g()) print(g()) print(g())
print(pcall(g))

local co = coroutine.create(function(a, b)
  print("start", a, b)
  local c = coroutine.yield(a + b)
  print("got", c)
  local d, e = coroutine.yield(c * 2)
  return d + e, "fin"
end)
print(coroutine.status(co))
print(coroutine.resume(co, 1, 2))
print(coroutine.status(co))
print(coroutine.resume(co, 10))
print(coroutine.resume(co, 3, 4))
print(coroutine.status(co), coroutine.resume(co))

-- status seen from inside
local outer
outer = coroutine.create(function()
  local inner = coroutine.create(function()
    print("outer from inner", coroutine.status(outer))
    coroutine.yield()
  end)
  coroutine.resume(inner)
  print("inner from outer", coroutine.status(inner))
  print("running is outer", coroutine.running() == outer, select(2, coroutine.running()))
  print("yieldable", coroutine.isyieldable())
end)
coroutine.resume(outer)

-- errors inside coroutines
local bad = coroutine.create(function() local x = nil; return x.field end)
print(coroutine.resume(bad))
print(coroutine.status(bad))
local tbl = coroutine.create(function() error({code = 7}) end)
local ok, e = coroutine.resume(tbl)
print(ok, type(e), e.code)
print(pcall(coroutine.wrap(function() error("wrapped", 2) end)))
print(pcall(coroutine.wrap(function() error() end)))

-- yield across pcall, xpcall, metamethods, iterators
local y = coroutine.wrap(function()
  local r = {pcall(function() return coroutine.yield("in pcall") + 1 end)}
  print("pcall gave", table.unpack(r))
  r = {xpcall(function() coroutine.yield("in xpcall"); error("oops") end,
    function(m) return "handled: " .. m end)}
  print("xpcall gave", table.unpack(r))
  local mt = {__index = function(t, k) return coroutine.yield("in __index " .. k) end,
              __add = function(a, b) return coroutine.yield("in __add") end,
              __lt = function(a, b) return coroutine.yield("in __lt") end,
              __concat = function(a, b) return coroutine.yield("in __concat") end,
              __eq = function(a, b) return coroutine.yield("in __eq") end,
              __len = function(a) return coroutine.yield("in __len") end}
  local obj = setmetatable({}, mt)
  print("index", obj.foo)
  print("add", obj + 1)
  print("lt", obj < setmetatable({}, mt))
  print("concat", obj .. "x")
  print("eq", obj == setmetatable({}, mt))
  print("len", #obj)
  for i, v in function(s, c) if c < 3 then return coroutine.yield("iter " .. c) end end, nil, 0 do
    print("loop", i, v)
  end
  return "finished"
end)
local v = y()
local n = 0
while v ~= "finished" do
  print("yielded", v)
  n = n + 1
  if v == "in pcall" then v = y(41)
  elseif v:match("^in __index") then v = y("idx")
  elseif v == "in __add" then v = y(100)
  elseif v == "in __lt" then v = y(true)
  elseif v == "in __concat" then v = y("cat")
  elseif v == "in __eq" then v = y(false)
  elseif v == "in __len" then v = y(9)
  elseif v:match("^iter") then v = y(n + 1, "val")
  else v = y() end
end
print("steps", n)

-- generic for over wrap
for a, b in coroutine.wrap(function() coroutine.yield(1, 1) coroutine.yield(2, 4) end) do print("for", a, b) end

-- a coroutine that yields from a nested Lua call
local deepy = coroutine.wrap(function()
  local function f(k) if k == 0 then coroutine.yield("bottom") return 0 end return 1 + f(k - 1) end
  return f(50)
end)
print(deepy(), deepy())

-- yield outside a coroutine in a coroutine-free function
print(pcall(coroutine.wrap(function() return pcall(coroutine.yield) end)))

-- wrap of a dead coroutine
local once = coroutine.wrap(function() return 1 end)
once()
print(pcall(once))

-- resume a running / normal coroutine
local selfco
selfco = coroutine.create(function()
  print(coroutine.resume(selfco))
  local child = coroutine.create(function() print(coroutine.resume(selfco)) end)
  coroutine.resume(child)
end)
coroutine.resume(selfco)

-- nesting depth
local function nest(k)
  local c = coroutine.create(function() return nest(k + 1) end)
  local okk, r = coroutine.resume(c)
  if okk then return r end
  return k
end
print("depth", nest(0))
local function nestw(k)
  local okk, r = pcall(coroutine.wrap(function() return nestw(k + 1) end))
  if okk then return r end
  return k
end
print("wrap depth", nestw(0))
print("done")
