-- Jobs: work on the worker pool, answered by futures on the main thread.
-- Jobs take real time on other threads while frames are virtual, so waits
-- for jobs run under a large frame limit.

local MANY = {frames = 10000000}

-- Checks that path is a shortest 4-way path on rows from (sx, sy) to (gx, gy).
local function check_path(path, rows, sx, sy, gx, gy, want_len)
  assert(type(path) == "table", "path is " .. type(path))
  assert(#path == want_len, "path has " .. #path .. " cells, want " .. want_len)
  assert(path[1].x == sx and path[1].y == sy, "starts at " .. path[1].x .. "," .. path[1].y)
  assert(path[#path].x == gx and path[#path].y == gy, "ends at " .. path[#path].x .. "," .. path[#path].y)
  for i, c in ipairs(path) do
    assert(rows[c.y]:sub(c.x, c.x) ~= "#", "cell " .. i .. " (" .. c.x .. "," .. c.y .. ") is a wall")
    if i > 1 then
      local p = path[i - 1]
      assert(math.abs(p.x - c.x) + math.abs(p.y - c.y) == 1, "step " .. i .. " is not to a neighbour")
    end
  end
end

-- The line the caller is on, from an error raised right there.
local function expect_error_here(fn, pattern)
  local ok, err = pcall(fn)
  assert(not ok, "no error raised")
  assert(type(err) == "string", "error is a " .. type(err))
  assert(err:find(pattern), "error " .. err .. " does not match " .. pattern)
  return err
end

-- ---- find_path ----

test("find_path finds a shortest path", function()
  local rows = {
    "....",
    ".##.",
    "....",
  }
  local path = wait(job("find_path", rows, 1, 1, 4, 3))
  check_path(path, rows, 1, 1, 4, 3, 6)
end, MANY)

test("find_path goes around walls", function()
  local rows = {
    ".#......",
    ".#.####.",
    ".#.#..#.",
    ".#.#.##.",
    "...#....",
  }
  -- from the top-left corner to the room at (5,3): down, right, up column 3,
  -- along the top, down column 8, left along the bottom... the room is walled
  -- except from (5,4) which is open below at (5,5).
  local path = wait(job("find_path", rows, 1, 1, 5, 3))
  assert(path, "no path found")
  check_path(path, rows, 1, 1, 5, 3, #path)
  -- the shortest: (1,1)->(1,5) 4, ->(3,5) 2, ->(3,1) 4, ->(8,1) 5, ->(8,5) 4, ->(5,5) 3, ->(5,3) 2
  assert(#path == 25, "path length " .. #path)
end, MANY)

test("find_path from a cell to itself is that cell", function()
  local path = wait(job("find_path", {"..."}, 2, 1, 2, 1))
  check_path(path, {"..."}, 2, 1, 2, 1, 1)
end, MANY)

test("find_path returns nil when the goal is unreachable", function()
  local rows = {
    "..#..",
    "..#..",
    "..#..",
  }
  local path = wait(job("find_path", rows, 1, 1, 5, 3))
  assert(path == nil, "found a path of " .. tostring(path and #path))
  local f = job("find_path", rows, 1, 1, 5, 3)
  local n = select("#", wait(f))
  assert(n == 1, "resolved with " .. n .. " values")
  assert(f.state == "resolved", "an unreachable goal is not a failure: " .. f.state)
end, MANY)

test("find_path to or from a wall is unreachable", function()
  assert(wait(job("find_path", {".#."}, 1, 1, 2, 1)) == nil)
  assert(wait(job("find_path", {"#.."}, 1, 1, 3, 1)) == nil)
end, MANY)

test("find_path with bad arguments raises at the caller's line", function()
  local rows = {"...", "..."}
  local cases = {
    {function() job("find_path", "....", 1, 1, 2, 1) end, "bad argument"},
    {function() job("find_path", {}, 1, 1, 1, 1) end, "bad argument"},
    {function() job("find_path", rows, 0, 1, 2, 1) end, "outside the grid"},
    {function() job("find_path", rows, 1, 1, 4, 1) end, "outside the grid"},
    {function() job("find_path", rows, 1, 1, 1, 3) end, "outside the grid"},
    {function() job("find_path", rows, 1.5, 1, 1, 1) end, "bad argument"},
    {function() job("find_path", rows, 1, 1, 2) end, "bad argument"},
    {function() job("find_path", {1, {}}, 1, 1, 1, 1) end, "bad argument"},
  }
  for i, c in ipairs(cases) do
    local ok, err = pcall(c[1]) local _, mark = pcall(function() error("") end)
    local where = mark:match("^(.-):%d+:")
    assert(not ok, "case " .. i .. " was accepted")
    assert(err:find(c[2]), "case " .. i .. ": " .. err)
    -- the message points into this file (the line inside the case function)
    assert(err:sub(1, #where) == where, "case " .. i .. " error is not in the script: " .. err)
  end
end)

test("a bad argument on one line names that line", function()
  local ok, err = pcall(function() job("find_path", 5) end) local _, mark = pcall(function() error("") end)
  local where = mark:match("^(.-:%d+:)")
  assert(not ok and err:sub(1, #where) == where, "error " .. tostring(err) .. ", want it at " .. where)
end)

-- ---- read_file ----

test("read_file reads a file under the assets root", function()
  local data = wait(job("read_file", "tiles.png"))
  assert(type(data) == "string", "got " .. type(data))
  assert(data:sub(1, 8) == "\137PNG\r\n\26\n", "not the PNG file")
end, MANY)

test("read_file of a missing file fails with a message naming the path", function()
  weft.on_error(function() end)
  local f = job("read_file", "no_such_dir/missing_file_42.txt")
  local ok, err = pcall(wait, f)
  assert(not ok, "read a missing file")
  assert(type(err) == "string" and err:find("missing_file_42.txt", 1, true), "error " .. tostring(err))
  assert(f.state == "failed", "state " .. f.state)
end, MANY)

test("read_file follows a '..' that stays inside the assets root", function()
  local data = wait(job("read_file", "levels/../tiles.png"))
  assert(data == wait(job("read_file", "tiles.png")), "not the same file")
end, MANY)

test("read_file refuses '..' and absolute paths at the caller's line", function()
  for _, p in ipairs{"../README.md", "a/../../x", "/etc/passwd", "..", ""} do
    local ok, err = pcall(function() job("read_file", p) end) local _, mark = pcall(function() error("") end)
    local where = mark:match("^(.-:%d+:)")
    assert(not ok, "path '" .. p .. "' was accepted")
    assert(err:sub(1, #where) == where, "error for '" .. p .. "' not at the caller's line: " .. err)
  end
end)

test("read_file needs a string path", function()
  assert(not pcall(job, "read_file"), "no path accepted")
  assert(not pcall(job, "read_file", {}), "table path accepted")
end)

-- ---- kinds ----

test("job of an unknown kind raises", function()
  local ok, err = pcall(function() job("no_such_kind", 1) end) local _, mark = pcall(function() error("") end)
  local where = mark:match("^(.-:%d+:)")
  assert(not ok and err:find("no_such_kind", 1, true), "error " .. tostring(err))
  assert(err:sub(1, #where) == where, "not at the caller's line: " .. err)
  assert(not pcall(job), "job() accepted")
  assert(not pcall(job, 42), "job(42) accepted")
end)

-- ---- timing ----

test("a job's future resolves on a later frame, never synchronously", function()
  for _ = 1, 20 do
    local start = frame()
    local f = job("find_path", {"."}, 1, 1, 1, 1)
    assert(f.state == "pending", "resolved inside job()")
    assert(not f:done())
    wait() -- leave the frame: the job cannot resolve inside this resume
    local path = wait(f)
    assert(frame() > start, "resolved in the frame it started")
    assert(#path == 1)
  end
end, MANY)

test("a job's future wakes its waiter on the main thread as a task", function()
  local f = job("find_path", {".."}, 1, 1, 2, 1)
  local t = spawn(function() return #wait(f), current() end)
  local n, who = wait(t)
  assert(n == 2 and who == t, "got " .. tostring(n))
end, MANY)

-- ---- cancellation ----

test("cancelling a job's future drops its result safely", function()
  local errors = 0
  weft.on_error(function() errors = errors + 1 end)
  local f = job("find_path", {"....", "....", "...."}, 1, 1, 4, 3)
  local done_calls = 0
  f:on_done(function() done_calls = done_calls + 1 end)
  local waiter_ok, waiter_err
  local w = spawn(function() waiter_ok, waiter_err = pcall(wait, f) end)
  f:cancel()
  assert(f.state == "cancelled")
  wait(w)
  assert(waiter_ok == false and weft.is_cancelled(waiter_err), "waiter got " .. tostring(waiter_err))
  -- later jobs finishing proves the pool went on past the cancelled one
  local later = {}
  for i = 1, 8 do later[i] = job("find_path", {"...."}, 1, 1, 4, 1) end
  wait(later)
  wait_frames(10)
  assert(f.state == "cancelled", "state " .. f.state)
  assert(done_calls == 1, "on_done ran " .. done_calls .. " times")
  local ok, err = pcall(f.result, f)
  assert(not ok and weft.is_cancelled(err))
  assert(errors == 0, errors .. " error(s) reported")
end, MANY)

test("a job whose future nobody holds still finishes without harm", function()
  for _ = 1, 10 do job("find_path", {"...."}, 1, 1, 4, 1) end
  collectgarbage("step", 1 << 20)
  local f = job("find_path", {"...."}, 1, 1, 4, 1)
  assert(#wait(f) == 4)
  wait_frames(5)
end, MANY)

-- ---- load ----

test("200 jobs in flight all resolve, each with its own result", function()
  local fs = {}
  for i = 1, 200 do
    local w = i % 37 + 1
    fs[i] = job("find_path", {string.rep(".", w)}, 1, 1, w, 1)
  end
  local pending = 0
  for i = 1, 200 do if fs[i].state == "pending" then pending = pending + 1 end end
  assert(pending == 200, pending .. " of 200 pending right after job()")
  local r = wait(all(fs))
  for i = 1, 200 do
    local w = i % 37 + 1
    assert(type(r[i]) == "table" and #r[i] == w, "job " .. i .. " gave " .. tostring(r[i] and #r[i]))
    assert(fs[i].state == "resolved")
  end
end, MANY)
