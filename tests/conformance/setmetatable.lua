-- debug.setmetatable on tables, as Lua's: past a __metatable field, nil
-- clears, a metatable with __gc marks the table for finalization, the
-- table is returned; and the deep copy with metatables that assertion
-- libraries make (luassert's util.deepcopy).
local mt = {__index = {kind = "copy"}}
local t = {}
print(debug.setmetatable(t, mt) == t, t.kind, getmetatable(t) == mt)
local prot = setmetatable({}, {__metatable = "locked"})
print(getmetatable(prot), debug.setmetatable(prot, mt) == prot, prot.kind, getmetatable(prot) == mt)
print(debug.setmetatable(prot, nil) == prot, getmetatable(prot), prot.kind)
print(pcall(debug.setmetatable, {}, 1))
print(pcall(debug.setmetatable, {}))
print(pcall(debug.setmetatable, {}, true))

local finalized = {}
do
  local locked = setmetatable({}, {__metatable = "locked"})
  debug.setmetatable(locked, {__gc = function() finalized[#finalized + 1] = "locked" end})
  debug.setmetatable({}, {__gc = function() finalized[#finalized + 1] = "plain" end})
end
collectgarbage()
collectgarbage()
table.sort(finalized)
print(table.concat(finalized, " "))

local function deepcopy(v, cache)
  if type(v) ~= "table" then return v end
  cache = cache or {}
  if cache[v] then return cache[v] end
  local copy = {}
  cache[v] = copy
  for k, x in next, v do copy[k] = deepcopy(x, cache) end
  debug.setmetatable(copy, debug.getmetatable(v))
  return copy
end
local point = setmetatable({x = 1, y = {2}}, {__tostring = function(p) return "point " .. p.x end})
point.self = point
local c = deepcopy(point)
print(tostring(c), c.y[1], c.y ~= point.y, c.self == c, getmetatable(c) == getmetatable(point))
