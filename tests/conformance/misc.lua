-- goto, varargs, tables, metatables, globals, strings.
-- goto
for i = 1, 3 do
  for j = 1, 3 do
    if j == 2 then goto continue end
    io_out = (io_out or "") .. i .. j .. " "
    ::continue::
  end
end
print(io_out)
do
  local k = 0
  ::top::
  k = k + 1
  if k < 5 then goto top end
  print("k", k)
end
-- varargs
local function va(...)
  local a, b = ...
  return select("#", ...), a, b, ...
end
print(va()) print(va(nil)) print(va(1, nil, 3)) print(va(nil, nil))
print(select(-1, 1, 2, 3), select(2, "a", "b", "c"))
print(pcall(select, 0))
local packed = table.pack(1, nil, 3)
print(packed.n, table.unpack(packed, 1, packed.n))
print(table.unpack({1, 2, 3}, 2), table.unpack({}, 1, 3))
local function tail(n) if n == 0 then return "tail done" end return tail(n - 1) end
print(tail(100000))
-- tables
local t = {10, 20, 30}
table.insert(t, 40) table.insert(t, 1, 5)
print(table.concat(t, ","), #t, table.remove(t), table.remove(t, 1), table.concat(t, ","))
print(pcall(table.insert, t, 10, 1))
print(pcall(table.insert, t, 1, 2, 3))
print(table.concat(table.move({1, 2, 3}, 1, 3, 2), ","), table.concat({}, ","), table.concat({1, 2.5, "x"}, "-", 2))
print(pcall(table.concat, {1, {}, 3}))
local keys = {}
for k in pairs({a = 1, b = 2, c = 3, 1, 2}) do keys[#keys + 1] = tostring(k) end
table.sort(keys)
print(table.concat(keys, " "))
for i, v in ipairs({1, 2, nil, 4}) do print("ipairs", i, v) end
print(#{1, 2, 3, nil}, rawlen({1, 2}), rawlen("abc"), rawequal(t, t), rawequal("a", "a"))
print(next({}), type(next), next({7}))
-- metatables
local V = {}
V.__index = V
V.__add = function(a, b) return setmetatable({x = a.x + b.x}, V) end
V.__eq = function(a, b) return a.x == b.x end
V.__lt = function(a, b) return a.x < b.x end
V.__le = function(a, b) return a.x <= b.x end
V.__tostring = function(a) return "V(" .. a.x .. ")" end
V.__call = function(self, y) return self.x * y end
V.__len = function() return 99 end
V.__concat = function(a, b) return tostring(a) .. "|" .. tostring(b) end
V.__unm = function(a) return setmetatable({x = -a.x}, V) end
V.__name = "Vector"
function V.new(x) return setmetatable({x = x}, V) end
function V:double() return V.new(self.x * 2) end
local a, b = V.new(1), V.new(2)
print(tostring(a + b), a == V.new(1), a < b, a <= b, a > b, a(10), #a, a .. b, tostring(-a), a:double().x)
print(getmetatable(a) == V, rawget(a, "double"), a.double ~= nil)
local prot = setmetatable({}, {__metatable = "locked"})
print(getmetatable(prot), pcall(setmetatable, prot, {}))
local log = {}
local proxy = setmetatable({}, {__newindex = function(t, k, v) log[#log + 1] = k; rawset(t, k, v) end})
proxy.a = 1 proxy.a = 2 proxy.b = 3
print(table.concat(log, ","), proxy.a)
local chain = setmetatable({}, {__index = setmetatable({mid = "m"}, {__index = {deep = "d"}})})
print(chain.mid, chain.deep, chain.none)
print(("x"):upper(), ("%d"):rep(2))
-- weak tables
local weak = setmetatable({}, {__mode = "k"})
weak[{}] = 1
print(type(weak))
-- globals and _ENV
x_global = 5
print(_G.x_global, _ENV.x_global, _G == _ENV)
local function with_env()
  local _ENV = {print = print}
  y = 1
  print(y, x_global)
end
with_env()
print(y)
print(load("return x_global")(), load("return x_global", "c", "t", {x_global = 9})())
local f = load("local a = ... ; return a * 2")
print(f(21))
local parts = {"return ", "1 + ", "2"}
print(load(function() return table.remove(parts, 1) end)())
local once = {"5"}
print(load(function() return table.remove(once) end))
-- strings
local s = "hello world from lua"
print(s:find("wor"), s:find("o", 6), s:find("l+"), s:find(".", 1, true), s:find("xyz"))
print(s:match("(%w+) (%w+)"), s:match("()or()"), ("key=val"):match("(%w+)=(%w+)"))
print(s:gsub("o", "0"), s:gsub("%w+", "%0%0", 2), ("abc"):gsub("", "-"))
print(("hello"):gsub("l", {l = "L"}), ("hello"):gsub("(h)(e)", "%2%1"))
for w in s:gmatch("%a+") do io_words = (io_words or 0) + 1 end
print(io_words)
for k, v in ("a=1, b=2"):gmatch("(%w+)=(%w+)") do print(k, v) end
print(("THE (quick) fox"):find("%((%a+)%)"), ("f(a(b)c)d"):match("%b()"), ("THE END"):match("%f[%a]%a+", 2))
print(("  trim  "):match("^%s*(.-)%s*$") .. "|", ("x"):byte(), string.char(104, 105), ("abc"):sub(-2), ("abc"):sub(2, 10))
print(("%d"):format(3), ("abc"):upper():lower(), ("abc"):reverse(), #("abc"):rep(3))
print(pcall(string.find, "a", "[a"), pcall(string.match, "a", "(()"), pcall(string.gsub, "a", "(", ""))
print(tostring(nil), tostring(false), tostring(12), tostring("s"), type(print), type(nil))
print(string.format("%s", 1.0), 1e300 * 1e10, -(0/0) ~= -(0/0), math.mininteger, 5 // 2 * 2.0)
print("done")
