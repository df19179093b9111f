-- Fakes of the game's entities for unit tests run by `weft test`, so a
-- behaviour's module can be tested without the game:
--
--   local fakes = require("lib.fakes")
--   local e = fakes.entity { x = 0, y = 0, waypoints = { { x = 40, y = 0 } } }
--   spawn(require("ai.patrol").start, e)
--   wait(1.1)                          -- 40 units at 40 a second
--   assert(e.x == 40)
--
-- A fake entity has the verbs an entity's state table has (move_to, stop,
-- face, say, play_anim, mood, position, facing, teleport, distance,
-- can_see, alive, destroy) and its fields (name, kind, group, saw_player,
-- waypoints). Its verbs take the time the game's would, on the test's
-- clock: a walk goes straight at its speed, a turn takes 0.25 s, a line
-- its seconds or a reading time. fakes.see(e, true) puts the player in its
-- sight (saw_player is set, can_see(player) is true) and false takes them
-- out. e.log lists the verbs called: { "move_to", "face", ... }.
--
-- The game's globals a behaviour calls (player(), entity(name)) are faked
-- with weft test's stub(name, value), which every module the test
-- requires sees: fakes.stub_game() stubs player() with fakes.player and
-- entity(name) with the fakes made so far, by name.
local M = {}

local Entity = {}
Entity.__index = Entity

local function point(p)
  if type(p) == "table" and p.position then return p:position() end
  return p
end

local by_name = {} -- the fakes made, by name: entity(name) under stub_game

function M.entity(fields)
  local e = setmetatable(fields or {}, Entity)
  e.name = e.name or "fake"
  e.kind = e.kind or "guard"
  e.x, e.y, e.angle = e.x or 0, e.y or 0, e.angle or 0
  e.group = e.group or group { name = e.name }
  e.saw_player = e.saw_player or signal(e.name .. " saw player")
  e.log = {}
  e._mood = "calm"
  by_name[e.name] = e
  return e
end

-- The fake player: what fakes.see puts in a fake entity's sight.
M.player = M.entity { name = "hero", kind = "hero" }

-- stub() exists under weft test only.
function M.stub_game()
  stub("player", function() return M.player end)
  stub("entity", function(name) return by_name[name] end)
end

function M.see(e, seen)
  e.sees_player = seen
  if seen then e.saw_player:set(M.player) else e.saw_player:reset() end
end

local function note(e, verb) e.log[#e.log + 1] = verb end

-- An action that takes `seconds` of the caller's clock, then applies
-- `finish` and resolves its future with `value`; replaced by the next of
-- the same kind (which resolves it "interrupted").
local function action(e, kind, seconds, finish, value)
  local old = e["_" .. kind]
  if old then
    old.timer:cancel()
    old.future:resolve("interrupted")
  end
  local f = future(kind)
  local slot = { future = f }
  slot.timer = after(seconds, function()
    if finish then finish() end
    e["_" .. kind] = nil
    f:resolve(value)
  end)
  e["_" .. kind] = slot
  return f
end

function Entity:move_to(place, speed)
  note(self, "move_to")
  local p = point(place)
  local d = math.sqrt((p.x - self.x) ^ 2 + (p.y - self.y) ^ 2)
  return action(self, "move", d / (speed or 40), function() self.x, self.y = p.x, p.y end, "arrived")
end

function Entity:stop()
  note(self, "stop")
  local m = self._move
  if m then
    m.timer:cancel()
    self._move = nil
    m.future:resolve("interrupted")
  end
end

local dirs = { right = 0, down = 90, left = 180, up = 270 }
function Entity:face(target)
  note(self, "face")
  local angle = type(target) == "number" and target or dirs[target]
  if not angle then
    local p = point(target)
    angle = math.deg(math.atan(p.y - self.y, p.x - self.x))
  end
  return action(self, "face", 0.25, function() self.angle = angle end, "done")
end

function Entity:say(text, seconds)
  note(self, "say")
  self.said = text
  return action(self, "say", seconds or 1.6 + 0.045 * #text, nil, "timeout")
end

function Entity:play_anim(_name, seconds)
  note(self, "play_anim")
  return action(self, "anim", seconds or 0.6, nil, "done")
end

function Entity:mood(name)
  if name then note(self, "mood") self._mood = name end
  return self._mood
end

function Entity:position() return { x = self.x, y = self.y } end
function Entity:facing() return self.angle end
function Entity:teleport(place) local p = point(place) self.x, self.y = p.x, p.y end
function Entity:alive() return not self.destroyed end
function Entity:destroy() self.destroyed = true self.group:cancel() end
function Entity:distance(target)
  local p = point(target)
  return math.sqrt((p.x - self.x) ^ 2 + (p.y - self.y) ^ 2)
end
function Entity:can_see(target)
  return target == M.player and self.sees_player == true
end

return M
