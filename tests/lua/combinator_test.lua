-- Waiting on lists, first, all, timeout, and how they nest and cancel.

local DT = 1 / 60

local function expect_pending(f, what)
  assert(f.state == "pending", (what or "future") .. " is " .. f.state)
end

-- ---- lists ----

test("wait on a list returns one value per element, in list order", function()
  local a, b, c = future(), future(), future()
  spawn(function()
    wait(0.1) c:resolve("c", "extra")
    wait(0.1) a:resolve("a")
    wait(0.1) b:resolve("b")
  end)
  local r = table.pack(wait{a, b, c})
  assert(r.n == 3, "got " .. r.n .. " values")
  assert(r[1] == "a" and r[2] == "b" and r[3] == "c", "got " .. tostring(r[1]) .. tostring(r[2]) .. tostring(r[3]))
end)

test("a list wakes once every element is done", function()
  local a, b = future(), future()
  spawn(function() wait(0.5) a:resolve(1) end)
  spawn(function() wait(1) b:resolve(2) end)
  wait{a, b}
  assert(frame() == 60, "woke in frame " .. frame())
end)

test("a number in a list is a timer and yields elapsed seconds", function()
  local f = future()
  spawn(function() wait(0.25) f:resolve("x") end)
  local v, e = wait{f, 0.5}
  assert(v == "x", "v " .. tostring(v))
  assert(math.abs(e - 0.5) < 1e-9, "elapsed " .. tostring(e))
  assert(frame() == 30, "frame " .. frame())
end)

test("a list of done elements returns at once", function()
  local a, b = future(), future()
  a:resolve(1)
  b:resolve(2)
  local fr = frame()
  local x, y = wait{a, b}
  assert(x == 1 and y == 2 and frame() == fr)
end)

test("a list fails with the first failure, without waiting for the rest", function()
  local a, b = future(), future()
  spawn(function() wait(0.1) b:fail("b broke") end)
  local ok, err = pcall(wait, {a, b})
  assert(not ok and err == "b broke", "got " .. tostring(err))
  assert(frame() == 6, "raised in frame " .. frame())
  expect_pending(a, "a")
end)

-- ---- first ----

test("first resolves to the index and values of the first to finish", function()
  local a, b, c = future(), future(), future()
  spawn(function() wait(0.2) a:resolve("late") end)
  spawn(function() wait(0.1) b:resolve("b1", "b2") end)
  local r = table.pack(wait(first{a, b, c}))
  assert(r.n == 3 and r[1] == 2 and r[2] == "b1" and r[3] == "b2",
    "got " .. r.n .. ": " .. tostring(r[1]) .. " " .. tostring(r[2]) .. " " .. tostring(r[3]))
  assert(frame() == 6, "woke in frame " .. frame())
end)

test("first leaves the other elements running", function()
  local a, b = future(), future()
  local t = spawn(function() wait(0.5) return "t done" end)
  local i = wait(first{a, t, b})
  assert(i == 2, "index " .. tostring(i))
  expect_pending(a, "a")
  expect_pending(b, "b")
  a:resolve(1) -- still completable, exactly once
  assert(not pcall(a.resolve, a, 2), "a completed twice")
  local t2 = spawn(function() wait(1) return "still here" end)
  local g = future()
  local j = wait(first{g, 0.1})
  assert(j == 2)
  assert(t2.status == "waiting", "first cancelled an element's task? " .. t2.status)
  expect_pending(g, "g")
  assert(wait(t2) == "still here")
end)

test("a number in first is a timer: wait(first{f, 5}) returns 2 on timeout", function()
  local f = future()
  local i, elapsed = wait(first{f, 5})
  assert(i == 2, "index " .. tostring(i))
  assert(math.abs(elapsed - 5) < 1e-9, "elapsed " .. tostring(elapsed))
  assert(frame() == 300, "timed out in frame " .. frame())
  expect_pending(f)
end)

test("first with a signal and a timer: the signal wins when it fires first", function()
  local door = signal("door")
  spawn(function() wait(1) door:fire("player") end)
  local i, who = wait(first{door, 5})
  assert(i == 1 and who == "player", "got " .. tostring(i) .. " " .. tostring(who))
  assert(frame() == 60)
end)

test("first fails with the error of the first to finish when it failed", function()
  local a, b = future(), future()
  local e = {"table error"}
  spawn(function() wait(0.1) a:fail(e) end)
  spawn(function() wait(0.2) b:resolve("ok") end)
  local ok, err = pcall(wait, first{a, b})
  assert(not ok and rawequal(err, e), "got " .. tostring(err))
  assert(frame() == 6)
end)

test("first of an element already done resolves at once", function()
  local a, b = future(), future()
  b:resolve("now")
  local f = first{a, b}
  assert(f.state == "resolved", "state " .. f.state)
  local i, v = f:result()
  assert(i == 2 and v == "now")
end)

test("first ignores completions after the first", function()
  local a, b = future(), future()
  local f = first{a, b}
  a:resolve("a")
  b:fail("b")
  local i, v = wait(f)
  assert(i == 1 and v == "a")
  assert(f.state == "resolved")
end)

-- ---- all ----

test("a done first, timeout or all gives the same values again to result() and later waits", function()
  local f, g = future(), future()
  local c1, c2, c3, c4 = first{f, 5}, timeout(g, 5), first{g, 5}, all{f, g}
  f:resolve("x")
  g:resolve("p", "q")
  wait()
  for i, c in ipairs{c1, c2, c3, c4} do assert(c.state == "resolved", i .. " is " .. c.state) end
  local r = table.pack(c1:result())
  assert(r.n == 2 and r[1] == 1 and r[2] == "x", "first: " .. r.n .. " " .. tostring(r[1]) .. " " .. tostring(r[2]))
  r = table.pack(wait(c1))
  assert(r.n == 2 and r[1] == 1 and r[2] == "x", "first, waited again: " .. r.n)
  r = table.pack(c2:result())
  assert(r.n == 2 and r[1] == "p" and r[2] == "q", "timeout: " .. r.n .. " " .. tostring(r[1]))
  r = table.pack(wait(c3))
  assert(r.n == 3 and r[1] == 1 and r[2] == "p" and r[3] == "q", "first of two values: " .. r.n)
  r = wait(c4)
  assert(r[1] == "x" and r[2] == "p", "all: " .. tostring(r[1]) .. " " .. tostring(r[2]))
  local one = wait{c1}
  assert(one == 1, "a done first in a list gives its first value, got " .. tostring(one))
end)

test("all resolves to a table of each element's first value", function()
  local a, b, c = future(), future(), future()
  spawn(function()
    wait(0.1) c:resolve("c1", "c2")
    wait(0.1) a:resolve("a1")
    wait(0.1) b:resolve()
  end)
  local t = wait(all{a, b, c})
  assert(type(t) == "table", "all gave " .. type(t))
  assert(t[1] == "a1" and t[2] == nil and t[3] == "c1", "got " .. tostring(t[1]) .. "," .. tostring(t[2]) .. "," .. tostring(t[3]))
  assert(frame() == 18, "resolved in frame " .. frame())
end)

test("all keeps a nil as a hole", function()
  local a, b, c = future(), future(), future()
  a:resolve(nil)
  b:resolve(false)
  c:resolve(3)
  local t = wait(all{a, b, c})
  assert(t[1] == nil and t[2] == false and t[3] == 3)
end)

test("all{} resolves at once to {}", function()
  local f = all{}
  assert(f.state == "resolved", "state " .. f.state)
  local fr = frame()
  local t = wait(f)
  assert(type(t) == "table" and next(t) == nil, "got " .. tostring(t))
  assert(frame() == fr)
end)

test("all fails with the first failure", function()
  local a, b, c = future(), future(), future()
  spawn(function()
    wait(0.1) b:fail("first failure")
    wait(0.1) c:fail("second failure")
  end)
  local ok, err = pcall(wait, all{a, b, c})
  assert(not ok and err == "first failure", "got " .. tostring(err))
  assert(frame() == 6, "failed in frame " .. frame())
  expect_pending(a, "a")
end)

test("all with timers and tasks", function()
  local t = spawn(function() wait(0.2) return "t" end)
  local r = wait(all{t, 0.5})
  assert(r[1] == "t" and math.abs(r[2] - 0.5) < 1e-9, "got " .. tostring(r[1]) .. " " .. tostring(r[2]))
  assert(frame() == 30)
end)

test("all and first reject a non-list", function()
  local f = future()
  assert(not pcall(all, f), "all(future) accepted")
  assert(not pcall(first, 5), "first(5) accepted")
  assert(not pcall(all, {"x"}), "all{'x'} accepted")
end)

-- ---- timeout ----

test("timeout fails with weft.TIMEOUT when x is not done in s seconds", function()
  local f = future()
  local ok, err = pcall(wait, timeout(f, 2))
  assert(not ok, "timeout resolved")
  assert(err == weft.TIMEOUT, "error " .. tostring(err))
  assert(frame() == 120, "timed out in frame " .. frame())
  expect_pending(f)
end)

test("timeout passes x's values when x finishes in time", function()
  local f = future()
  spawn(function() wait(1) f:resolve("open", 3) end)
  local a, b = wait(timeout(f, 2))
  assert(a == "open" and b == 3, "got " .. tostring(a) .. " " .. tostring(b))
  assert(frame() == 60)
end)

test("timeout passes x's failure", function()
  local f = future()
  spawn(function() wait(1) f:fail("jammed") end)
  local ok, err = pcall(wait, timeout(f, 2))
  assert(not ok and err == "jammed", "got " .. tostring(err))
end)

test("timeout of a done x resolves at once", function()
  local f = future()
  f:resolve(7)
  local t = timeout(f, 1)
  assert(t.state == "resolved", "state " .. t.state)
  assert(t:result() == 7)
end)

test("timeout works on tasks and signals", function()
  local t = spawn(function() wait(3) return 1 end)
  local ok, err = pcall(wait, timeout(t, 1))
  assert(not ok and err == weft.TIMEOUT, tostring(err))
  assert(t.status == "waiting", "timeout touched the task: " .. t.status)
  local s = signal()
  spawn(function() wait(0.5) s:fire("go") end)
  assert(wait(timeout(s, 1)) == "go")
end)

-- ---- same-frame ordering (docs/script-api.md: timers fire at the frame start, before
-- any task runs; finished jobs are delivered before timers) ----

test("a future resolved by a task in the frame its timeout falls due loses to the timer", function()
  local f = future()
  local to = timeout(f, 0.5) -- due on frame 30
  local resolved_in
  spawn(function()
    wait(0.5) -- also wakes on frame 30
    f:resolve("too late")
    resolved_in = frame()
  end)
  local ok, err = pcall(wait, to)
  assert(not ok and err == weft.TIMEOUT, "got " .. tostring(err))
  wait()
  assert(resolved_in == 30, "resolved in frame " .. tostring(resolved_in))
  assert(f.state == "resolved", "the timeout touched f: " .. f.state)
end)

test("the timer wins even when the resolving task went to sleep first", function()
  local f = future()
  spawn(function() wait(0.5) f:resolve("x") end)
  local to = timeout(f, 0.5)
  local ok, err = pcall(wait, to)
  assert(not ok and err == weft.TIMEOUT, "got " .. tostring(err))
  assert(frame() == 30)
end)

test("first with a timer and a future resolved by a task in the same frame: the timer wins", function()
  local f = future()
  spawn(function() wait(1) f:resolve() end)
  local i = wait(first{f, 1})
  assert(i == 2, "index " .. tostring(i))
end)

test("a job finishing in the frame its timeout falls due wins over the timer", function()
  -- Each frame, start a timeout that falls due on the next frame. The job's
  -- completion is delivered at the start of some frame J; the timeout made
  -- in frame J-1 falls due in J too, and must see the job's result.
  -- Frames are virtual and cost microseconds, so a job takes a real-time
  -- dependent number of frames (the first one also starts the threads).
  wait(job("find_path", {"."}, 1, 1, 1, 1))
  local f = job("find_path", {"..", ".."}, 1, 1, 2, 2)
  local done_in
  f:on_done(function() done_in = frame() end)
  local tos = {}
  while not f:done() do
    tos[#tos + 1] = {made = frame(), f = timeout(f, DT)}
    wait()
  end
  assert(#tos >= 1, "the job finished synchronously")
  local last
  for _, t in ipairs(tos) do
    if t.made == done_in - 1 then last = t end
  end
  assert(last, "no timeout falls due in the job's frame " .. tostring(done_in))
  assert(last.f.state == "resolved",
    "the timeout due in the job's frame was " .. last.f.state .. " (the timer beat the job)")
  local path = last.f:result()
  assert(type(path) == "table" and #path == 3, "path " .. tostring(path))
  for _, t in ipairs(tos) do
    if t.made < done_in - 1 then
      local ok, err = pcall(t.f.result, t.f)
      assert(not ok and err == weft.TIMEOUT, "timeout made in frame " .. t.made .. " is " .. t.f.state)
    end
  end
end, {frames = 10000000})

-- ---- nesting ----

test("a nested list waits like all", function()
  local a, b, c = future(), future(), future()
  spawn(function() wait(0.1) a:resolve("a") wait(0.1) b:resolve("b") wait(0.1) c:resolve("c") end)
  local ab, cv = wait{{a, b}, c}
  assert(type(ab) == "table" and ab[1] == "a" and ab[2] == "b", "nested gave " .. tostring(ab))
  assert(cv == "c")
  assert(frame() == 18)
end)

test("first of an all and a future: the all wins when both parts finish first", function()
  local a, b, c = future(), future(), future()
  spawn(function() wait(0.1) a:resolve(1) wait(0.1) b:resolve(2) wait(0.1) c:resolve(3) end)
  local i, t = wait(first{all{a, b}, c})
  assert(i == 1, "index " .. tostring(i))
  assert(t[1] == 1 and t[2] == 2)
  assert(frame() == 12, "frame " .. frame())
end)

test("first of an all and a future: the future wins when it finishes first", function()
  local a, b, c = future(), future(), future()
  spawn(function() wait(0.1) a:resolve(1) wait(0.1) c:resolve("c") wait(0.1) b:resolve(2) end)
  local i, v = wait(first{all{a, b}, c})
  assert(i == 2 and v == "c", "got " .. tostring(i) .. " " .. tostring(v))
  expect_pending(b, "b")
end)

test("all of firsts and timeouts", function()
  local a, b = future(), future()
  spawn(function() wait(0.1) b:resolve("b") end)
  local r = wait(all{first{b, a}, timeout(b, 0.2), 0.3})
  assert(r[1] == 1 and r[2] == "b" and math.abs(r[3] - 0.3) < 1e-9, "got " .. tostring(r[1]) .. " " .. tostring(r[2]))
  assert(frame() == 18, "frame " .. frame())
  local ok, err = pcall(wait, all{first{a, b}, timeout(a, 0.2), 0.3}) -- a never resolves
  assert(not ok and err == weft.TIMEOUT, "got " .. tostring(err))
  assert(frame() == 30, "failed in frame " .. frame())
end)

test("a failure deep inside nested combinators reaches the waiter unchanged", function()
  local a, b = future(), future()
  local e = {}
  spawn(function() wait(0.1) a:fail(e) end)
  local ok, err = pcall(wait, first{all{a, b}, 5})
  assert(not ok and rawequal(err, e), "got " .. tostring(err))
end)

-- ---- cancellation ----

test("a cancelled waiter leaves every wait list at once", function()
  local f, s = future(), signal()
  local resumed = 0
  local waiter = spawn(function()
    wait{f, s}
    resumed = resumed + 1
  end)
  local others = {f = 0, s = 0}
  local of = spawn(function() wait(f) others.f = others.f + 1 end)
  local os_ = spawn(function() wait(s) others.s = others.s + 1 end)
  waiter:cancel()
  assert(waiter.status == "cancelled", "status " .. waiter.status)
  f:resolve()
  s:fire()
  wait(0.1)
  assert(resumed == 0, "the cancelled waiter resumed")
  assert(others.f == 1 and others.s == 1, "other waiters woke " .. others.f .. "/" .. others.s)
  assert(of.status == "done" and os_.status == "done")
end)

test("a cancelled waiter on first{...} leaves it; the combinator still resolves for others", function()
  local f, s = future(), signal()
  local comb = first{f, s}
  local resumed = false
  local w1 = spawn(function() wait(comb) resumed = true end)
  local got
  local w2 = spawn(function() got = wait(comb) end)
  w1:cancel()
  s:fire("x")
  wait(w2)
  assert(not resumed)
  assert(got == 2, "other waiter got " .. tostring(got))
end)

test("a cancelled waiter's timer in a list never fires for it", function()
  local runs = 0
  local t = spawn(function()
    wait{future(), 0.2}
    runs = runs + 1
  end)
  wait(0.1)
  t:cancel()
  wait(0.5)
  assert(runs == 0)
  assert(t.status == "cancelled")
end)

test("weft.tasks() describes a list wait as 'all k/n'", function()
  local a, b = future(), future()
  local t = spawn(function() wait{a, b} end)
  a:resolve()
  local desc
  for _, info in ipairs(weft.tasks()) do
    if info.task == t then desc = info.waiting end
  end
  assert(desc == "all 1/2", "waiting " .. tostring(desc))
  t:cancel()
end)
