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

return M
