-- A module the boot script needs, broken when the game starts (issue 34,
-- repro 2): lib/cinema.lua does not load, the boot script stops, the
-- panel says why and the screen offers a reset. The save that fixes the
-- file resets the game by itself: the level loads, the brains start,
-- the intro plays. (This test cannot require lib.check: it needs
-- lib.cinema.)
-- live: in a window
-- start with: scripts/lib/cinema.lua tests/demo/live/edits/cinema_broken.lua

local function expect(v, what) if not v then error("expected: " .. what, 2) end end

local function wall_within(seconds, what, pred)
  local t0 = os.time()
  while not pred() do
    if os.time() - t0 > seconds then error(what .. ": not within " .. seconds .. " s (wall clock)", 2) end
    wait()
  end
end

local function names_cinema()
  for _, e in ipairs(errors()) do
    if e.message:find("cinema.lua:%d+:") then return true end
  end
end

wait(0.5)
expect(names_cinema(), "the panel names the broken line of lib/cinema.lua")
expect(#entities() == 0, "no level without the boot script")
expect(game_state().boot == "failed", "the game knows its boot script stopped (" .. tostring(game_state().boot) .. ")")
tap("f1")
tap("f2")
wait(0.2)
local r = overlay_rects()
expect(r.boot, "the screen offers a reset")
for _, name in ipairs { "errors", "tasks", "modules", "graph" } do
  local o = r[name]
  expect(o, name .. " is drawn")
  expect(o.y + o.h <= r.boot.y or o.x + o.w <= r.boot.x or o.x >= r.boot.x + r.boot.w,
    name .. " keeps clear of the offer")
end
screenshot("build/demo-test/dead_boot.png")
tap("f1")
tap("f2")

print("SAVE scripts/lib/cinema.lua scripts/lib/cinema.lua")
wall_within(20, "the fixed save resets the game: the level is built", function() return #entities() > 0 end)
local cinema = require("lib.cinema")
wall_within(10, "the intro plays", function() return cinema.state.current == "cinematics.intro" end)
expect(game_state().boot == "ok", "the boot script runs (" .. tostring(game_state().boot) .. ")")
expect(not names_cinema(), "the panel no longer shows the fixed error")
local brains = 0
for _, t in ipairs(weft.tasks()) do
  if t.name == "ai.patrol" then brains = brains + 1 end
end
expect(brains > 3, "the guards patrol (" .. brains .. ")")
