-- A middleclass-shaped class library: instances get their class's
-- metamethods copied into their metatable, __gc included.
local class = {_VERSION = 'class 1.0'}

local metamethods = {'__add', '__call', '__concat', '__div', '__idiv', '__le', '__lt', '__mod',
  '__mul', '__pow', '__sub', '__tostring', '__unm', '__eq', '__len', '__gc', '__close',
  '__band', '__bor', '__bxor', '__shl', '__shr', '__bnot'}

local function propagate(klass, name, f)
  f = name == '__index' and type(f) == 'function' and function(self, k)
    local v = klass.__declared.__instanceDict[k]
    if v ~= nil then return v end
    return f(self, k)
  end or f
  klass.__instanceDict[name] = f
  for sub in pairs(klass.subclasses) do
    if rawget(sub.__declared, name) == nil then propagate(sub, name, f) end
  end
end

local function declare(klass, name, f)
  klass.__declared[name] = f
  if f == nil and klass.super then f = klass.super.__instanceDict[name] end
  propagate(klass, name, f)
end

local function tostring_class(self) return 'class ' .. self.name end
local function call_class(self, ...) return self:new(...) end

local function create(name, super)
  local dict = {}
  dict.__index = dict
  local klass = {name = name, super = super, static = {}, __instanceDict = dict,
                 __declared = {__instanceDict = dict}, subclasses = setmetatable({}, {__mode = 'k'})}
  if super then
    setmetatable(klass.static, {__index = function(_, k)
      local v = rawget(dict, k)
      if v == nil then return super.static[k] end
      return v
    end})
  else
    setmetatable(klass.static, {__index = function(_, k) return rawget(dict, k) end})
  end
  setmetatable(klass, {__index = klass.static, __tostring = tostring_class, __call = call_class,
                       __newindex = declare})
  return klass
end

local function include(klass, mixin)
  for k, v in pairs(mixin) do if k ~= 'included' and k ~= 'static' then klass[k] = v end end
  for k, v in pairs(mixin.static or {}) do klass.static[k] = v end
  if type(mixin.included) == 'function' then mixin:included(klass) end
  return klass
end

local Object = create('Object')
function Object.static:allocate() return setmetatable({class = self}, self.__instanceDict) end
function Object.static:new(...)
  local o = self:allocate()
  o:initialize(...)
  return o
end
function Object.static:subclass(name)
  local sub = create(name, self)
  for k, v in pairs(self.__instanceDict) do
    if not (k == '__index' and type(v) == 'table') then propagate(sub, k, v) end
  end
  sub.initialize = function(inst, ...) return self.initialize(inst, ...) end
  self.subclasses[sub] = true
  return sub
end
function Object.static:isSubclassOf(other)
  return type(other) == 'table' and type(self.super) == 'table' and
    (self.super == other or self.super:isSubclassOf(other))
end
function Object.static:include(...) for _, m in ipairs{...} do include(self, m) end return self end
function Object:initialize() end
function Object:__tostring() return 'instance of ' .. tostring(self.class) end
function Object:isInstanceOf(k)
  return type(k) == 'table' and type(self) == 'table' and
    (self.class == k or (type(self.class) == 'table' and self.class:isSubclassOf(k)))
end

function class.class(name, super)
  assert(type(name) == 'string', 'A name (string) is needed for the new class')
  return super and super:subclass(name) or Object:subclass(name)
end
class.Object = Object
class.metamethods = metamethods
setmetatable(class, {__call = function(_, ...) return class.class(...) end})
return class
