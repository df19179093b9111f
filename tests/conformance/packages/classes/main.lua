-- Classes with metamethods, finalizers among them, as a game's code uses them.
-- The collector runs only when asked (lua5.4 runs it generational, weft
-- incremental: when a cycle ends on its own differs), so when finalizers
-- run is the same under both.
collectgarbage('stop')
local class = require 'class'
print(class._VERSION, select(2, require('class')) == nil)

local Point = class('Point')
function Point:initialize(x, y) self.x, self.y = x, y end
function Point.__add(a, b) return Point(a.x + b.x, a.y + b.y) end
function Point.__eq(a, b) return a.x == b.x and a.y == b.y end
function Point.__lt(a, b) return a.x < b.x or (a.x == b.x and a.y < b.y) end
function Point.__le(a, b) return not (b < a) end
function Point:__tostring() return ('(%g, %g)'):format(self.x, self.y) end
function Point.__unm(a) return Point(-a.x, -a.y) end
function Point.__len(a) return math.sqrt(a.x * a.x + a.y * a.y) end
function Point.__concat(a, b) return tostring(a) .. tostring(b) end
function Point:__call(k) return self[k] end
function Point.__idiv(a, n) return Point(a.x // n, a.y // n) end

local p, q = Point(1, 2), Point(3, 4)
print(p + q, -p, #q, p .. q, p('y'), q // 2)
print(p == Point(1, 2), p < q, q <= p, p ~= q, tostring(Point), p:isInstanceOf(Point))

local Point3 = class('Point3', Point)
function Point3:initialize(x, y, z) Point.initialize(self, x, y) self.z = z end
function Point3:__tostring() return ('(%g, %g, %g)'):format(self.x, self.y, self.z) end
local r = Point3(1, 2, 3)
print(r, r + p, r:isInstanceOf(Point), Point3:isSubclassOf(Point), Point3.super == Point)

-- Finalizers: instances of a class that declares __gc
local log = {}
local Resource = class('Resource')
function Resource:initialize(name) self.name = name end
function Resource:__gc() print('finalize', self.name) log[#log + 1] = self.name end
function Resource:__close() print('close', self.name) end

local function scratch(n, prefix)
  for i = 1, n do Resource(prefix .. i) end
end
scratch(3, 'tmp')
print('before collect', #log)
collectgarbage()
print('after collect', #log, table.concat(log, ','))

do
  local res <close> = Resource('scoped')
  print('using', res.name)
end

-- A subclass inherits __gc; one that declares its own replaces it.
local Handle = class('Handle', Resource)
local Quiet = class('Quiet', Resource)
function Quiet:__gc() print('quiet', self.name) end
local function more()
  Handle('h1')
  Quiet('q1')
  Handle('h2')
end
more()
collectgarbage('collect')

-- A finalizer that brings its object back: it is not finalized again.
local saved
local Phoenix = class('Phoenix', Resource)
function Phoenix:__gc() print('rises', self.name) saved = self end
local function burn() Phoenix('bird') end
burn()
collectgarbage()
print('saved', saved and saved.name)
saved = nil
collectgarbage()
print('gone', saved)

-- A mixin and __gc = true (ignored, as Lua ignores it)
local HasWings = {fly = function(self) return self.name .. ' flies' end}
local Bird = class('Bird'):include(HasWings)
function Bird:initialize(name) self.name = name end
Bird.__gc = true
local function flock() for i = 1, 2 do Bird('b' .. i) end end
flock()
collectgarbage()
print(Bird('c'):fly(), type(collectgarbage('count')), collectgarbage('isrunning'))
collectgarbage('restart')
print(collectgarbage('isrunning'), collectgarbage('step', 0) ~= nil)
collectgarbage('stop')

-- Still reachable at the end: finalized when the state closes, newest first.
KEEP = {Resource('last1'), Resource('last2')}
print('end of main')
