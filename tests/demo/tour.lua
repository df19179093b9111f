-- Not a test: plays through the game's key moments and saves the
-- screenshots of docs/designers.md in build/tour/ (cp them over docs/ to
-- refresh the page's pictures). From the repository root:
--   xvfb-run -a build/weft-demo --no-watch --seed 7 --script tests/demo/tour.lua
-- (in a window, so the frame graph shows real drawing times; --headless
-- works too and skips that one picture).
local check = require("lib.check")
local util = require("lib.util")
local cinema = require("lib.cinema")
local dir = "build/tour/"

local function shot(name) screenshot(dir .. name .. ".png") wait() end

-- the loading screen and the intro
wait_until(function() return frame() >= 9 end)
shot("loading")
check.within(5, "intro", function() return cinema.state.current == "cinematics.intro" end)
wait(9.5)
shot("intro-pan")
check.within(40, "dialogue", function() return overlay_shown("dialogue") end)
wait(1.5)
shot("intro-dialogue")
tap("escape")
check.within(2, "play", function() return not input_locked() end)

-- at the gate with the frame graph on, then a guard spots the hero
wait(1)
if not game_state().headless then
  tap("f2")
  wait(4)
  shot("frame-graph")
  tap("f2")
end
local guard = entity("well_guard")
local spot
check.within(20, "a spot", function()
  if cinema.state.current then return false end
  for d = 88, 64, -4 do
    local p = util.ahead(guard, d)
    if guard:can_see(p) and p.x < tile(41, 0).x then spot = p return true end -- not in the garden
  end
end)
player():teleport(spot)
wait(0.45)
shot("chase")
player():teleport(mark("hero_gate"))
check.within(40, "no cinematic", function() return cinema.state.current == nil end)
wait(1.5)
tap("f1")
wait(0.2)
shot("inspector")
tap("f1")

-- a script error: the overlay shows it, the game goes on
entity("hall_west").group:spawn(function()
  wait(0.1)
  local lantern = nil
  return lantern.oil
end)
wait(0.5)
shot("error-overlay")
tap("f4")

-- the garden: the sage's cinematic
check.within(40, "no cinematic", function() return cinema.state.current == nil end)
player():teleport(tile(44, 22.5))
check.within(20, "the sage's advice", function()
  local d = game_state().dialogue
  return d and d.text:find("lanterns") and #d.text > 0
end)
wait(1.5)
shot("sage")
check.within(60, "sage done", function() return cinema.state.current == nil end)

-- the vault and the ending, with the guards held where they stand (the
-- seed decides their rounds; a tour is not the place to get caught)
for _, guard in ipairs(entities("guard")) do guard.group:pause() end
player():teleport(tile(29, 12))
wait(0.2)
wait(hold("up", 0.6))
check.within(20, "vault opens", function() return door_open("vault") end)
check.within(20, "vault done", function() return cinema.state.current == nil end)
wait(hold("up", 1.2))
check.within(20, "ending", function() return cinema.state.current == "cinematics.ending" end)
wait(7.5)
shot("ending")
check.within(30, "ending done", function() return cinema.state.current == nil end)

-- the console, with a few lines a designer might type
wait(1)
tap("`")
for _, line in ipairs {
  'entity("gate_guard"):position()',
  'entity("gate_guard").leg',
  'entity("gate_guard").group.time_scale = 0.25',
  'entities("guard")[1]:mood()',
  'for i, e in ipairs(entities("guard")) do if i <= 3 then print(e.name, e:mood()) end end',
  'x = 41',
  'x + 1',
  'nope()',
} do
  console_input(line)
  tap("return")
  wait(0.1)
end
console_input("ent")
tap("tab")
wait(0.5)
shot("console")
tap("`")
