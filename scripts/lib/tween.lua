-- Tweens: numbers that glide to a value over time, on the clock of the
-- task's group (slowed, paused and cancelled with it, as a wait is).
--
--   local tween = require("lib.tween")
--   wait(tween(guard, { alpha = 0 }, 1.5, "in_out_sine"))       -- fade a guard out
--   tween(tween.camera, mark("vault_view"), 2, "out_cubic")      -- glide the camera
--   tween(tween.camera, { zoom = 2 }, 1, "in_out_sine")          -- and close in
--   tween(tween.screen, { fade = 1 }, 0.5)                       -- to black
--   tween(tween.screen, { r = 1, g = 0.8, b = 0.7 }, 3)          -- the light: dawn
--   tween(my_table, { volume = 0 }, 2, "out_quad")               -- any number field
--
-- tween(target, to, seconds [, easing]) starts at once and returns a
-- future that resolves to "done" at the end; it is cancelled (and the
-- tween stops where it is) by f:cancel() or when the task that started it
-- ends first: a tween lives as long as that task.
-- Easings are Penner's, by name (M.easings lists them) or a function of
-- u in [0, 1].
local M = {}

local pi, sin, cos, sqrt = math.pi, math.sin, math.cos, math.sqrt

local function out_bounce(u)
  local n, d = 7.5625, 2.75
  if u < 1 / d then return n * u * u
  elseif u < 2 / d then u = u - 1.5 / d return n * u * u + 0.75
  elseif u < 2.5 / d then u = u - 2.25 / d return n * u * u + 0.9375
  else u = u - 2.625 / d return n * u * u + 0.984375 end
end

M.easings = {
  linear = function(u) return u end,
  in_quad = function(u) return u * u end,
  out_quad = function(u) return 1 - (1 - u) * (1 - u) end,
  in_out_quad = function(u) return u < 0.5 and 2 * u * u or 1 - (-2 * u + 2) ^ 2 / 2 end,
  in_cubic = function(u) return u * u * u end,
  out_cubic = function(u) return 1 - (1 - u) ^ 3 end,
  in_out_cubic = function(u) return u < 0.5 and 4 * u * u * u or 1 - (-2 * u + 2) ^ 3 / 2 end,
  in_sine = function(u) return 1 - cos(u * pi / 2) end,
  out_sine = function(u) return sin(u * pi / 2) end,
  in_out_sine = function(u) return -(cos(pi * u) - 1) / 2 end,
  in_expo = function(u) return u == 0 and 0 or 2 ^ (10 * u - 10) end,
  out_expo = function(u) return u == 1 and 1 or 1 - 2 ^ (-10 * u) end,
  in_back = function(u) return 2.70158 * u * u * u - 1.70158 * u * u end,
  out_back = function(u) return 1 + 2.70158 * (u - 1) ^ 3 + 1.70158 * (u - 1) ^ 2 end,
  out_elastic = function(u)
    if u == 0 or u == 1 then return u end
    return 2 ^ (-10 * u) * sin((u * 10 - 0.75) * (2 * pi) / 3) + 1
  end,
  in_bounce = function(u) return 1 - out_bounce(1 - u) end,
  out_bounce = out_bounce,
  in_circ = function(u) return 1 - sqrt(1 - u * u) end,
  out_circ = function(u) return sqrt(1 - (u - 1) ^ 2) end,
}

-- The game's own properties, read and written through its verbs.
local Camera = {}
function Camera.get(k)
  if k == "zoom" then return game_state().zoom end
  return game_state().camera[k]
end
function Camera.set(values)
  if values.x or values.y then
    local c = game_state().camera
    pan_camera({ x = values.x or c.x, y = values.y or c.y }, 0)
  end
  if values.zoom then zoom_camera(values.zoom, 0) end
end

local Screen = { keys = { fade = true, r = 1, g = 2, b = 3 } }
function Screen.get(k)
  if k == "fade" then return game_state().fade end
  return game_state().light[Screen.keys[k]]
end
function Screen.set(values)
  if values.fade then fade(values.fade, 0) end
  if values.r or values.g or values.b then
    local l = game_state().light
    ambient(values.r or l[1], values.g or l[2], values.b or l[3], 0)
  end
end

M.camera = setmetatable({}, { __index = { kind_of_target = Camera } })
M.screen = setmetatable({}, { __index = { kind_of_target = Screen } })

local function is_entity(t)
  return type(t) == "table" and t.id ~= nil and t.group ~= nil and t.position ~= nil
end

local Entity = {}
function Entity.get(e, k)
  if k == "x" or k == "y" then return e:position()[k] end
  if k == "alpha" then return e:alpha() end
end
function Entity.set(e, values)
  if values.x or values.y then
    local p = e:position()
    e:teleport({ x = values.x or p.x, y = values.y or p.y })
  end
  if values.alpha then e:alpha(values.alpha) end
end

-- Reads and writes `target` (a plain table, an entity, M.camera, M.screen).
local function access(target)
  local game = rawget(getmetatable(target) or {}, "__index")
  game = type(game) == "table" and game.kind_of_target
  if game then
    return function(k) return game.get(k) end, function(values) game.set(values) end
  elseif is_entity(target) then
    return function(k) return Entity.get(target, k) end, function(values) Entity.set(target, values) end
  end
  return function(k) return target[k] end, function(values)
    for k, v in pairs(values) do target[k] = v end
  end
end

function M.tween(target, to, seconds, easing)
  if type(target) ~= "table" then error("tween: the target is a table, an entity, tween.camera or tween.screen", 2) end
  if type(to) ~= "table" then error("tween: the values to reach are a table", 2) end
  if type(seconds) ~= "number" or seconds < 0 then error("tween: seconds must be a number >= 0", 2) end
  local ease = easing or "linear"
  if type(ease) == "string" then
    ease = M.easings[ease] or error("tween: no easing named '" .. easing .. "'", 2)
  end
  local get, set = access(target)
  local from, goal = {}, {}
  for k, v in pairs(to) do
    if k == "x" or k == "y" or type(v) == "number" then
      local now = get(k)
      if type(now) ~= "number" then error("tween: field '" .. tostring(k) .. "' is not a number", 2) end
      from[k], goal[k] = now, v
    end
  end
  local done = future()
  local group = current().group
  spawn(function()
    local _ <close> = finally(function() done:cancel() end)   -- no-op once resolved
    local t0 = group.now
    while true do
      local u = seconds > 0 and (group.now - t0) / seconds or 1
      if u > 1 then u = 1 end
      local k, values = ease(u), {}
      for name, a in pairs(from) do values[name] = a + (goal[name] - a) * k end
      set(values)
      if u >= 1 then break end
      wait()
      if done.state ~= "pending" then return end       -- f:cancel() stops it
    end
    done:resolve("done")
  end)
  return done
end

return setmetatable(M, { __call = function(_, ...) return M.tween(...) end })
