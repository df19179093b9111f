-- Small helpers for positions ({x =, y =} in world units; a tile is 16).
local M = {}

-- The place `dist` units short of `to`, on the way from `from` (entities
-- or positions): where to stop to talk to someone.
function M.toward(from, to, dist)
  local a = from.position and from:position() or from
  local b = to.position and to:position() or to
  local dx, dy = b.x - a.x, b.y - a.y
  local len = math.sqrt(dx * dx + dy * dy)
  if len <= dist then return a end
  return { x = b.x - dx / len * dist, y = b.y - dy / len * dist }
end

-- The place `dist` units ahead of an entity, where it is looking.
function M.ahead(e, dist)
  local p, a = e:position(), math.rad(e:facing())
  return { x = p.x + math.cos(a) * dist, y = p.y + math.sin(a) * dist }
end

-- Starts fn(e, ...) as a helper task in the entity's group (it lives as
-- long as the entity, not just the caller) named `key`, and stops the one
-- started before under that key. A behaviour's start calls it again after
-- a reload, so the helper restarts on the new code instead of a second
-- one joining the first:
--   util.helper(e, "ears", listen)
function M.helper(e, key, fn, ...)
  local old = e[key]
  if old then old:cancel() end
  local t = e.group:spawn(fn, e, ...)
  t.name = key
  e[key] = t
  return t
end

return M
