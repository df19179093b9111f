-- A class with metamethods, Penlight's List shape.
local utils = require 'pl.utils'
local List = {}
List.__index = List
List._name = 'List'

local function new(t) return setmetatable(t or {}, List) end
setmetatable(List, {__call = function(_, t) return new(t) end})

function List:append(v) self[#self + 1] = v return self end
function List:map(f, ...) local r = new() for i = 1, #self do r[i] = f(self[i], ...) end return r end
function List:filter(p) local r = new() for i = 1, #self do if p(self[i]) then r:append(self[i]) end end return r end
function List:reduce(f, acc) for i = 1, #self do acc = f(acc, self[i]) end return acc end
function List:slice(a, b) return new(table.move(self, a, b or #self, 1, {})) end
function List:join(sep) return table.concat(self:map(tostring), sep or ',') end
function List.__tostring(self) return '{' .. self:join(',') .. '}' end
function List.__eq(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do if a[i] ~= b[i] then return false end end
  return true
end
function List.__concat(a, b)
  local r = new(table.move(a, 1, #a, 1, {}))
  for i = 1, #b do r:append(b[i]) end
  return r
end
List.split = function(s, sep) return new(utils.split(s, sep)) end
return List
