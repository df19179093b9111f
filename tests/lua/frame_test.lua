-- The frame: when sleeping and woken tasks resume, and what they see.
-- Every case runs on a virtual clock with dt = 1/60 and starts before the
-- first step (frame 0, now 0).

local DT = 1 / 60

local function near(a, b, eps)
  return math.abs(a - b) <= (eps or 1e-9)
end

test("a case started before the first step starts at frame 0 and time 0", function()
  assert(frame() == 0, "frame() at start is " .. frame())
  assert(now() == 0, "now() at start is " .. now())
  assert(realtime() == 0, "realtime() at start is " .. realtime())
  wait()
  assert(frame() == 1, "first step is frame " .. frame())
  assert(near(now(), DT), "now() in frame 1 is " .. now())
end)

test("wait(0.5) at dt=1/60 resumes on frame 30 and returns 0.5", function()
  local e = wait(0.5)
  assert(frame() == 30, "woke on frame " .. frame())
  assert(near(e, 0.5), "elapsed " .. tostring(e))
  assert(near(now(), 0.5), "now() " .. now())
end)

test("wait(s) returns the elapsed game seconds, not the requested ones", function()
  -- 0.01 s is less than one frame: it wakes on the next frame, 1/60 s later
  local e = wait(0.01)
  assert(frame() == 1, "woke on frame " .. frame())
  assert(near(e, DT), "elapsed " .. tostring(e))
end)

test("wait() resumes on the next frame", function()
  wait(0.1)
  local f = frame()
  local e = wait()
  assert(frame() == f + 1, "woke on frame " .. frame() .. " after " .. f)
  assert(near(e, DT), "elapsed " .. tostring(e))
end)

test("wait(0) resumes on the next frame", function()
  local f = frame()
  local e = wait(0)
  assert(frame() == f + 1, "woke on frame " .. frame())
  assert(near(e, DT), "elapsed " .. tostring(e))
end)

test("wait(-1) resumes on the next frame", function()
  local f = frame()
  local e = wait(-1)
  assert(frame() == f + 1, "woke on frame " .. frame())
  assert(near(e, DT), "elapsed " .. tostring(e))
end)

test("wait(nil) resumes on the next frame", function()
  local f = frame()
  wait(nil)
  assert(frame() == f + 1, "woke on frame " .. frame())
end)

test("coroutine.yield() in a task is a wait", function()
  local f = frame()
  coroutine.yield(0.5)
  assert(frame() == f + 30, "woke on frame " .. frame())
end)

test("sleeps with the same deadline wake in the order they went to sleep", function()
  local order = {}
  local ts = {}
  for i = 1, 5 do
    ts[i] = spawn(function()
      wait(0.25)
      order[#order + 1] = i
    end)
  end
  wait(ts)
  assert(table.concat(order, ",") == "1,2,3,4,5", "order " .. table.concat(order, ","))
end)

test("next-frame sleeps wake in the order they went to sleep", function()
  local order = {}
  local ts = {}
  for i = 1, 5 do
    ts[i] = spawn(function()
      wait()
      order[#order + 1] = i
    end)
  end
  wait(ts)
  assert(table.concat(order, ",") == "1,2,3,4,5", "order " .. table.concat(order, ","))
end)

test("wait(), wait(0) and wait(-1) have deadline now: they wake before a sleep due later in that frame", function()
  local order, ts = {}, {}
  -- all fall due in frame 1; the sleeps of 0.01 and 0.005 went to sleep first
  for i, s in ipairs{0.01, 0, -1, "none", 0.005, {0.002}} do
    ts[i] = spawn(function()
      if s == "none" then wait() else wait(s) end
      order[#order + 1] = type(s) == "table" and "list 0.002" or tostring(s)
    end)
  end
  wait(ts)
  assert(frame() == 1, "woke on frame " .. frame())
  local got = table.concat(order, ",")
  assert(got == "0,-1,none,list 0.002,0.005,0.01", "order " .. got)
end)

test("coroutine.yield(x) returns what x produced, as wait(x) does", function()
  local f = future()
  after(0.1, function() f:resolve("open", 3) end)
  local a, b = coroutine.yield(f)
  assert(a == "open" and b == 3, "yield(future) gave " .. tostring(a) .. ", " .. tostring(b))
  local t = spawn(function() wait() return 1, nil, 3 end)
  local n = select("#", coroutine.yield(t))
  assert(n == 3, "yield(task) gave " .. n .. " values")
  local e = coroutine.yield(0.5)
  assert(near(e, 0.5), "yield(0.5) gave " .. tostring(e))
  local bad = spawn(function() wait() error("jammed", 0) end)
  weft.on_error(function() end)
  local ok, err = pcall(coroutine.yield, bad)
  assert(not ok and err == "jammed", "yield(failed task) gave " .. tostring(err))
end)

test("earlier deadlines wake first when due in the same frame", function()
  local order = {}
  -- all three fall due in frame 30 (0.5 s): deadlines 0.5 > 0.49 > 0.485
  local a = spawn(function() wait(0.5); order[#order + 1] = "a" end)
  local b = spawn(function() wait(0.49); order[#order + 1] = "b" end)
  local c = spawn(function() wait(0.485); order[#order + 1] = "c" end)
  wait{a, b, c}
  assert(table.concat(order, ",") == "c,b,a", "order " .. table.concat(order, ","))
end)

test("due sleeps from different frames: earliest deadline first", function()
  local order = {}
  local ts = {}
  for i, s in ipairs{0.3, 0.1, 0.2} do
    ts[i] = spawn(function()
      wait(s)
      order[#order + 1] = s
    end)
  end
  wait(ts)
  assert(table.concat(order, ",") == "0.1,0.2,0.3", "order " .. table.concat(order, ","))
end)

test("sleeps on different group clocks due in one frame wake in sleep order", function()
  local fast = group{time_scale = 2}
  local slow = group{time_scale = 0.5}
  -- all three fall due in frame 30
  local function run(order_of_sleep)
    local order, ts = {}, {}
    local starters = {
      fast = function() return fast:spawn(function() wait(1); order[#order + 1] = "fast" end) end,
      root = function() return spawn(function() wait(0.5); order[#order + 1] = "root" end) end,
      slow = function() return slow:spawn(function() wait(0.25); order[#order + 1] = "slow" end) end,
    }
    for i, name in ipairs(order_of_sleep) do ts[i] = starters[name]() end
    local f = frame()
    wait(ts)
    assert(frame() == f + 30, "woke on frame " .. frame() .. " after " .. f)
    return table.concat(order, ",")
  end
  local a = run{"fast", "root", "slow"}
  assert(a == "fast,root,slow", "order " .. a)
  local b = run{"slow", "root", "fast"}
  assert(b == "slow,root,fast", "order " .. b)
end)

test("a sleep begun later with an earlier deadline wakes first", function()
  local order = {}
  local a = spawn(function() wait(0.5); order[#order + 1] = "late deadline" end)
  wait(0.1)
  local b = spawn(function() wait(0.2); order[#order + 1] = "early deadline" end)
  wait{a, b}
  assert(order[1] == "early deadline" and order[2] == "late deadline",
    "order " .. table.concat(order, ","))
end)

test("a task woken during the pass runs later in the same frame", function()
  local t = spawn(function()
    wait(0.5)
    return frame(), now()
  end)
  local f, n = wait(t)
  assert(f == 30, "task finished in frame " .. tostring(f))
  assert(frame() == f, "waiter resumed in frame " .. frame() .. ", task finished in " .. f)
  assert(now() == n, "waiter sees now() " .. now() .. ", task saw " .. n)
end)

test("a chain of waiters all resume in the frame the first task finishes", function()
  local a = spawn(function() wait(0.2); return frame() end)
  local b = spawn(function() wait(a); return frame() end)
  local c = spawn(function() wait(b); return frame() end)
  local fc = wait(c)
  local fa = wait(a)
  assert(fa == 12, "a finished in frame " .. fa)
  assert(fc == fa, "c resumed in frame " .. fc .. ", a finished in " .. fa)
  assert(frame() == fa, "outer resumed in frame " .. frame())
end)

test("every script sees the same now() within a frame", function()
  local seen = {}
  local ts = {}
  for i = 1, 10 do
    ts[i] = spawn(function()
      wait(i * 0.013)
      wait() -- everyone runs once in this frame
      seen[#seen + 1] = {frame(), now()}
      wait(0.5 - i * 0.013 - 1 / 60)
      seen[#seen + 1] = {frame(), now()}
    end)
  end
  wait(ts)
  local by_frame = {}
  for _, s in ipairs(seen) do
    local f, n = s[1], s[2]
    if by_frame[f] then
      assert(by_frame[f] == n, "frame " .. f .. ": now() " .. n .. " vs " .. by_frame[f])
    else
      by_frame[f] = n
    end
  end
  assert(#seen == 20, "ran " .. #seen .. " times")
end)

test("now() advances by dt each frame and stays put within a frame", function()
  local prev = now()
  for _ = 1, 10 do
    local a = now()
    local t = spawn(function() return now() end)
    assert(wait(t) == a, "spawned task saw a different now()")
    wait()
    assert(near(now() - prev, DT), "now() advanced by " .. (now() - prev))
    prev = now()
  end
end)

test("waiting on a finished task returns at once without yielding", function()
  local t = spawn(function() return "x", 2 end)
  assert(t.status == "done", "status " .. t.status)
  local f, n = frame(), now()
  local a, b = wait(t)
  assert(a == "x" and b == 2, "values " .. tostring(a) .. ", " .. tostring(b))
  assert(frame() == f and now() == n, "wait yielded: frame " .. frame() .. " was " .. f)
end)

test("waiting on a list of finished tasks returns at once", function()
  local t1 = spawn(function() return 1 end)
  local t2 = spawn(function() return 2 end)
  local f = frame()
  local a, b = wait{t1, t2}
  assert(a == 1 and b == 2, "values " .. tostring(a) .. ", " .. tostring(b))
  assert(frame() == f, "wait yielded: frame " .. frame())
end)

test("waiting on a finished task does not yield even across other tasks", function()
  local ran = false
  local t = spawn(function() return 1 end)
  spawn(function() ran = true end) -- runs at once anyway
  local other = spawn(function() wait(); ran = "later" end)
  wait(t)
  assert(ran == true, "another task ran during the wait: " .. tostring(ran))
  other:cancel()
end)

test("wait(math.huge) sleeps until cancelled", function()
  local woke = false
  local t = spawn(function()
    wait(math.huge)
    woke = true
  end)
  wait(100)
  assert(not woke, "wait(math.huge) woke")
  assert(t.status == "waiting", "status " .. t.status)
  t:cancel()
  assert(t.status == "cancelled", "status " .. t.status)
  assert(not woke, "code after wait(math.huge) ran")
end, {frames = 7000})

test("a number in a list is a sleep of the waiting task", function()
  local f = frame()
  local a, b = wait{0.5, 0.25}
  assert(frame() == f + 30, "woke on frame " .. frame())
  -- each timer reports the game seconds elapsed when it completed
  assert(near(a, 0.5) and near(b, 0.25), "values " .. tostring(a) .. ", " .. tostring(b))
end)

test("a list waits for every element", function()
  local t = spawn(function() wait(1); return "t" end)
  local s, v = wait{0.25, t}
  assert(frame() == 60, "woke on frame " .. frame())
  assert(v == "t", "task value " .. tostring(v))
end)

test("an empty list returns at once", function()
  local f = frame()
  local n = select("#", wait{})
  assert(n == 0, "returned " .. n .. " values")
  assert(frame() == f, "wait{} yielded")
end)

test("several waiters on one task wake in the order they began waiting", function()
  local order = {}
  local t = spawn(function() wait(0.2) end)
  local ws = {}
  for i = 1, 4 do
    ws[i] = spawn(function()
      wait(t)
      order[#order + 1] = i
    end)
  end
  wait(ws)
  assert(table.concat(order, ",") == "1,2,3,4", "order " .. table.concat(order, ","))
end)
