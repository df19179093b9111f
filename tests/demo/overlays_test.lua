-- Every overlay at once, as a designer debugging a cinematic has them:
-- an entity's script error (the panel, and a marker over the entity), the
-- task inspector (F1), the frame graph (F2), the game paused in slow
-- motion and a line of dialogue. Nothing covers anything else: the boxes
-- the frame drew do not overlap, and the screenshots in build/demo-test/
-- show it. The reload note joins them in reload.lua.
local check = require("lib.check")
local out = "build/demo-test/"

check.skip_intro()
local guard = entity("gate_guard")

-- a behaviour of the gate guard fails
guard.group:spawn(function()
  wait(0.1)
  local lantern = nil
  return lantern.oil   -- line 17
end)
check.within(1, "the error is reported", function() return #errors() > 0 end)
local e = errors()[#errors()]
check.expect(e.who == "gate_guard", "the report names the entity: " .. tostring(e.who))
check.expect(e.message:find("^gate_guard: tests/demo/overlays_test%.lua:17: "),
  "the message names the entity first, then file:line: " .. e.message)
check.expect(e.trace:find("^gate_guard: "), "so does the trace: " .. e.trace:sub(1, 60))

-- a line of dialogue: said from a task of the cutscenes group
groups.cutscenes:spawn(function()
  wait(player():say("The gate is open, the captain asleep, and nobody watches the well. " ..
                    "Time to find the Moon Idol.", math.huge))
end)
check.within(1, "the dialogue box opens", function() return overlay_shown("dialogue") end)
wait(2)                                   -- the line types out

wait(pan_camera(guard, 0))                -- the camera follows the guard
tap("f1")
tap("f2")
tap("t")
tap("p")
check.expect(overlay_shown("tasks") and overlay_shown("graph") and overlay_shown("paused"),
  "F1, F2 and P are on")
screenshot(out .. "overlays_all.png")

-- the boxes drawn this frame: every overlay is there, none overlaps another
local r = overlay_rects()
for _, name in ipairs { "errors", "tasks", "modules", "graph", "dialogue", "paused", "slow_motion" } do
  check.expect(r[name], name .. " is drawn")
end
local function overlap(a, b)
  return a.x < b.x + b.w and b.x < a.x + a.w and a.y < b.y + b.h and b.y < a.y + a.h
end
local world = { marker = true }   -- drawn in the world, under the overlays
for na, a in pairs(r) do
  for nb, b in pairs(r) do
    check.expect(na == nb or world[na] or world[nb] or not overlap(a, b), na .. " and " .. nb .. " overlap")
  end
  check.expect(a.x >= 0 and a.y >= 0 and a.x + a.w <= 1280 and a.y + a.h <= 720, na .. " is on screen")
end

-- the same without the dialogue: the overlays take the room it left
wait()
tap("p")
clear_speech()
wait()
r = overlay_rects()
check.expect(not r.dialogue and r.errors and r.tasks and r.graph, "the overlays without dialogue")
for na, a in pairs(r) do
  for nb, b in pairs(r) do
    check.expect(na == nb or world[na] or world[nb] or not overlap(a, b),
      na .. " and " .. nb .. " overlap (no dialogue)")
  end
end
screenshot(out .. "overlays_play.png")

-- the guard whose script failed carries a marker over it in the world
check.expect(r.marker, "a marker is drawn over the gate guard")

-- F1 and F2 off: the marker over the guard is in plain sight
wait()
tap("f1")
tap("f2")
r = overlay_rects()
local m = r.marker
check.expect(m and m.x >= 0 and m.y >= 0 and m.x + m.w <= 1280 and m.y + m.h <= 720,
  "the marker is on screen")
check.expect(not overlap(m, r.errors), "the error panel leaves the marker in sight")
screenshot(out .. "overlays_marker.png")

-- F4 dismisses the report; the guard's patrol still runs, so the marker goes
wait()
tap("f4")
wait()
check.expect(not overlay_shown("errors"), "F4 dismissed the panel")
check.expect(not overlay_rects().marker, "no marker once no report names the guard and it still runs")

-- a guard whose behaviour died stays marked after F4: it is frozen
local well = entity("well_guard")
for _, t in ipairs(weft.tasks()) do
  if t.who == "well_guard" then t.task:cancel() end
end
well.group:spawn(function() error("the well guard's brain broke") end)
check.within(1, "reported", function() return #errors() == 1 and errors()[1].who == "well_guard" end)
wait(pan_camera(well, 0))
tap("f4")
wait(0.5)
check.expect(not overlay_shown("errors"), "F4 dismissed the panel")
check.expect(overlay_rects().marker, "the frozen guard keeps its marker")
screenshot(out .. "overlays_frozen.png")
