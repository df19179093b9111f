-- Helpers for the game's end-to-end test scripts (tests/demo/): waiting
-- with a deadline (game or wall clock), counting tasks, and getting past
-- the intro like a player would.
local game = require("lib.game")
local cinema = require("lib.cinema")

local M = {}

-- Waits until pred() is true; fails the test after `seconds`.
function M.within(seconds, what, pred)
  local t = spawn(wait_until, pred)
  local ok = pcall(wait, timeout(t, seconds))
  t:cancel()
  if not ok then error(what .. ": not within " .. seconds .. " s", 2) end
end

-- Waits until pred() is true; fails the test after `seconds` of the wall
-- clock (whole seconds): for what the game's clock does not drive, such
-- as a save the file watcher must see while frames run as fast as they go.
function M.wall_within(seconds, what, pred)
  local t0 = os.time()
  while not pred() do
    if os.time() - t0 > seconds then error(what .. ": not within " .. seconds .. " s (wall clock)", 2) end
    wait()
  end
end

-- How many live tasks are named `name`.
function M.count_tasks(name)
  local n = 0
  for _, t in ipairs(weft.tasks()) do
    if t.name == name then n = n + 1 end
  end
  return n
end

-- Fails with a message unless v is true.
function M.expect(v, what)
  if not v then error("expected: " .. what, 2) end
  return v
end

-- Waits for the level, lets the intro start, then presses Escape. The
-- loading runs under the frame's time (wall clock): on a busy machine it
-- takes more frames, so the wait is long; it ends as soon as it loaded.
function M.skip_intro()
  M.within(60, "the level loads", function() return game.state.phase ~= "loading" end)
  M.within(5, "the intro starts", function() return cinema.state.current == "cinematics.intro" end)
  wait(0.5)
  tap("escape")
  M.within(2, "control returns", function() return game.state.phase == "play" and not input_locked() end)
end

-- Distance between two positions.
function M.dist(a, b)
  return math.sqrt((a.x - b.x) ^ 2 + (a.y - b.y) ^ 2)
end

return M
