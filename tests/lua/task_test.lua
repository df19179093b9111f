-- Tasks: spawn, defer, after, every, handles, status, waiting on tasks.

local DT = 1 / 60

local function near(a, b, eps)
  return math.abs(a - b) <= (eps or 1e-9)
end

test("spawn runs the function at once up to its first wait", function()
  local steps = {}
  local t = spawn(function()
    steps[#steps + 1] = "before wait"
    wait()
    steps[#steps + 1] = "after wait"
  end)
  assert(#steps == 1 and steps[1] == "before wait", "ran " .. table.concat(steps, ","))
  assert(t.status == "waiting", "status " .. t.status)
  wait()
  assert(#steps == 2, "ran " .. table.concat(steps, ","))
end)

test("spawn returns a task handle", function()
  local t = spawn(function() wait() end)
  assert(type(t) == "userdata", "spawn returned a " .. type(t))
  assert(tostring(t):match("^task"), "tostring " .. tostring(t))
  assert(type(t.cancel) == "function", "no cancel method")
  t:cancel()
end)

test("spawn passes its extra arguments to the function", function()
  local got
  spawn(function(...) got = table.pack(...) end, 1, nil, "three")
  assert(got.n == 3 and got[1] == 1 and got[2] == nil and got[3] == "three",
    "got " .. tostring(got and got.n) .. " arguments")
end)

test("a task that never waits is done when spawn returns", function()
  local t = spawn(function() return 42 end)
  assert(t.status == "done", "status " .. t.status)
end)

test("defer starts the task next frame", function()
  local ran_in
  local f = frame()
  local t = defer(function() ran_in = frame() end)
  assert(ran_in == nil, "defer ran at once")
  assert(t.status == "waiting", "status " .. t.status)
  wait(t)
  assert(ran_in == f + 1, "ran in frame " .. tostring(ran_in) .. " after " .. f)
end)

test("defer passes its extra arguments", function()
  local t = defer(function(a, b, c) return a, b, c end, "x", nil, 3)
  local a, b, c = wait(t)
  assert(a == "x" and b == nil and c == 3, "got " .. tostring(a) .. tostring(b) .. tostring(c))
end)

test("deferred tasks start in the order they were deferred", function()
  local order = {}
  local ts = {}
  for i = 1, 5 do ts[i] = defer(function() order[#order + 1] = i end) end
  wait(ts)
  assert(table.concat(order, ",") == "1,2,3,4,5", "order " .. table.concat(order, ","))
end)

test("after(s, fn) runs fn once after s seconds", function()
  local runs = {}
  local t = after(0.5, function(a, b)
    runs[#runs + 1] = frame()
    return a + b
  end, 1, 2)
  assert(#runs == 0, "after ran at once")
  local v = wait(t)
  assert(v == 3, "after's task returned " .. tostring(v))
  assert(#runs == 1 and runs[1] == 30, "ran in frames " .. table.concat(runs, ","))
  wait(1)
  assert(#runs == 1, "ran " .. #runs .. " times")
end)

test("after returns a task handle that can be cancelled before it runs", function()
  local ran = false
  local t = after(0.5, function() ran = true end)
  assert(t.status == "waiting", "status " .. t.status)
  wait(0.25)
  t:cancel()
  wait(0.5)
  assert(not ran, "cancelled after() still ran")
  assert(t.status == "cancelled", "status " .. t.status)
end)

test("every(s, fn) runs 100 times in 10 s at s = 0.1 without drift", function()
  local times = {}
  local start = now()
  local t = every(0.1, function() times[#times + 1] = now() end)
  wait(10)
  wait() -- the frame holding 10 s has certainly run; the next run is at 10.1
  assert(#times == 100, "ran " .. #times .. " times in 10 s")
  for k, at in ipairs(times) do
    local due = start + k * 0.1
    assert(at >= due - 1e-9, "run " .. k .. " at " .. at .. " before its time " .. due)
    assert(at < due - 1e-9 + DT, "run " .. k .. " at " .. at .. " a frame late for " .. due)
  end
  t:cancel()
end, {frames = 700})

test("every runs first at start + s", function()
  local first
  local t = every(0.5, function() first = first or frame() end)
  wait(0.25)
  assert(first == nil, "every ran early, frame " .. tostring(first))
  wait(0.5)
  assert(first == 30, "first run in frame " .. tostring(first))
  t:cancel()
end)

test("every runs at most once per frame", function()
  local frames = {}
  local t = every(0.001, function() frames[#frames + 1] = frame() end)
  wait(0.5)
  for i = 2, #frames do
    assert(frames[i] > frames[i - 1], "two runs in frame " .. frames[i])
  end
  assert(#frames >= 29, "ran " .. #frames .. " times in 30 frames")
  t:cancel()
end)

test("every passes its extra arguments on every run", function()
  local got = {}
  local t = every(0.1, function(a, b) got[#got + 1] = a .. b end, "x", "y")
  wait(0.35)
  t:cancel()
  assert(#got == 3, "ran " .. #got .. " times")
  for _, v in ipairs(got) do assert(v == "xy", "got " .. v) end
end)

test("every's task stops when cancelled", function()
  local n = 0
  local t = every(0.1, function() n = n + 1 end)
  wait(0.55)
  t:cancel()
  local at = n
  wait(1)
  assert(n == at, "ran " .. (n - at) .. " times after cancel")
  assert(t.status == "cancelled", "status " .. t.status)
end)

test("status is running only for the executing task", function()
  local me = current()
  assert(me.status == "running", "current().status " .. me.status)
  local inner_sees_outer
  local t = spawn(function()
    assert(current().status == "running", "child sees itself as " .. current().status)
    inner_sees_outer = me.status
    wait()
  end)
  assert(inner_sees_outer == "waiting", "parent seen from child as " .. tostring(inner_sees_outer))
  assert(t.status == "waiting", "suspended child is " .. t.status)
  t:cancel()
end)

test("a task woken but not yet resumed is waiting", function()
  local a, b
  local seen
  a = spawn(function()
    wait(0.5)
    seen = b.status -- b is due in this frame too, but not resumed yet
  end)
  b = spawn(function() wait(0.5) end)
  wait{a, b}
  assert(seen == "waiting", "b seen as " .. tostring(seen))
end)

test("status is done after a normal return", function()
  local t = spawn(function() wait() return 1 end)
  wait(t)
  assert(t.status == "done", "status " .. t.status)
end)

test("status is failed after an error", function()
  weft.on_error(function() end)
  local t = spawn(function() wait() error("boom") end)
  pcall(wait, t)
  assert(t.status == "failed", "status " .. t.status)
end)

test("status is cancelled after cancel", function()
  local t = spawn(function() wait(10) end)
  t:cancel()
  assert(t.status == "cancelled", "status " .. t.status)
end)

test("current() is the handle spawn returned", function()
  local inside
  local t = spawn(function()
    inside = current()
    wait()
    assert(current() == inside, "current() changed across a wait")
  end)
  assert(inside == t, "current() inside differs from spawn's handle")
  assert(rawequal(inside, t), "handles are not the same object")
  wait(t)
end)

test("current() in a case is its task and stays the same", function()
  local me = current()
  assert(me ~= nil, "current() is nil in a task")
  wait()
  assert(current() == me, "current() changed")
end)

test("handles of different tasks differ", function()
  local a = spawn(function() wait() end)
  local b = spawn(function() wait() end)
  assert(a ~= b, "two tasks compare equal")
  wait{a, b}
end)

test("a handle keeps comparing equal after the task finished", function()
  local inside
  local t = spawn(function() inside = current(); wait() end)
  wait(t)
  assert(t == inside, "handle changed identity after finishing")
  local set = {[t] = true}
  assert(set[inside], "handle is not usable as a table key")
end)

test("wait(t) returns the task's return values", function()
  local t = spawn(function() wait(0.1); return 1, nil, "three", nil end)
  local r = table.pack(wait(t))
  assert(r.n == 4, "got " .. r.n .. " values")
  assert(r[1] == 1 and r[2] == nil and r[3] == "three" and r[4] == nil, "wrong values")
end)

test("wait(t) on a finished task returns the same values again", function()
  local t = spawn(function() return "a", "b" end)
  local a, b = wait(t)
  local c, d = wait(t)
  assert(a == "a" and b == "b" and c == "a" and d == "b", "values differ")
end)

test("wait(t) on a task that returned nothing returns nothing", function()
  local t = spawn(function() wait() end)
  local n = select("#", wait(t))
  assert(n == 0, "got " .. n .. " values")
end)

test("wait(t) raises the task's error", function()
  weft.on_error(function() end)
  local t = spawn(function() wait(0.1); error("boom") end)
  local ok, err = pcall(wait, t)
  assert(not ok, "wait on a failed task succeeded")
  assert(type(err) == "string" and err:match("task_test%.lua:%d+: boom"), "err " .. tostring(err))
end)

test("wait(t) raises a table error unchanged", function()
  weft.on_error(function() end)
  local e = {code = 7}
  local t = spawn(function() wait(0.1); error(e) end)
  local ok, err = pcall(wait, t)
  assert(not ok, "wait on a failed task succeeded")
  assert(rawequal(err, e), "error table changed: " .. tostring(err))
  local ok2, err2 = pcall(wait, t) -- already finished: raises at once
  assert(not ok2 and rawequal(err2, e), "second wait: " .. tostring(err2))
end)

test("wait(t) on an already failed task raises at once", function()
  weft.on_error(function() end)
  local t = spawn(function() error("early") end)
  assert(t.status == "failed", "status " .. t.status)
  local f = frame()
  local ok, err = pcall(wait, t)
  assert(not ok and tostring(err):match("early"), "err " .. tostring(err))
  assert(frame() == f, "raised after yielding")
end)

test("a list wait returns one value per element in order", function()
  local a = spawn(function() wait(0.3); return "a", "extra" end)
  local b = spawn(function() wait(0.1); return "b" end)
  local c = spawn(function() return "c" end)
  local d = spawn(function() wait(0.2) end)
  local r = table.pack(wait{a, b, c, d, 0.05})
  assert(r.n == 5, "got " .. r.n .. " values")
  assert(r[1] == "a" and r[2] == "b" and r[3] == "c" and r[4] == nil,
    "values " .. tostring(r[1]) .. tostring(r[2]) .. tostring(r[3]) .. tostring(r[4]))
  assert(type(r[5]) == "number", "timer value " .. tostring(r[5]))
end)

test("a list wait raises the first failure", function()
  weft.on_error(function() end)
  local e = {}
  local a = spawn(function() wait(1); return 1 end)
  local b = spawn(function() wait(0.1); error(e) end)
  local ok, err = pcall(wait, {a, b})
  assert(not ok and rawequal(err, e), "err " .. tostring(err))
  assert(frame() == 6, "failure reached the waiter in frame " .. frame())
  a:cancel()
end)

test("a task cannot wait for itself", function()
  local ok, err = pcall(wait, current())
  assert(not ok, "waiting on itself succeeded")
  assert(tostring(err):match("itself"), "err " .. tostring(err))
end)

test("20,000 tasks spawned and finished in one script", function()
  local ts = {}
  local done = 0
  for i = 1, 20000 do
    ts[i] = spawn(function()
      wait(0.1)
      done = done + 1
      return i
    end)
  end
  local r = table.pack(wait(ts))
  assert(done == 20000, "finished " .. done)
  assert(r.n == 20000, "got " .. r.n .. " values")
  for i = 1, 20000 do
    if r[i] ~= i then error("value " .. i .. " is " .. tostring(r[i])) end
  end
  for i = 1, 20000, 997 do
    assert(ts[i].status == "done", "task " .. i .. " is " .. ts[i].status)
  end
  assert(#weft.tasks() == 1, #weft.tasks() .. " tasks still live")
end)

test("20,000 tasks that never wait finish at once", function()
  local n = 0
  for _ = 1, 20000 do spawn(function() n = n + 1 end) end
  assert(n == 20000, "ran " .. n)
  assert(#weft.tasks() == 1, #weft.tasks() .. " tasks still live")
end)

test("t.name is settable", function()
  local t = spawn(function() wait() end)
  assert(type(t.name) == "string", "default name is a " .. type(t.name))
  t.name = "walker"
  assert(t.name == "walker", "name " .. tostring(t.name))
  local found = false
  for _, info in ipairs(weft.tasks()) do
    if info.task == t then found = info.name == "walker" end
  end
  assert(found, "weft.tasks() does not show the new name")
  t:cancel()
end)

test("t.name can be set from inside the task", function()
  local t = spawn(function()
    current().name = "self-named"
    wait()
  end)
  assert(t.name == "self-named", "name " .. tostring(t.name))
  t:cancel()
end)

test("t.name rejects a non-string", function()
  local t = spawn(function() wait() end)
  local ok, err = pcall(function() t.name = {} end)
  assert(not ok, "a table name was accepted")
  assert(tostring(err):match("task_test%.lua:%d+:"), "err " .. tostring(err))
  t:cancel()
end)

test("other task fields are read-only", function()
  local t = spawn(function() wait() end)
  local ok = pcall(function() t.status = "done" end)
  assert(not ok, "t.status was writable")
  assert(t.status == "waiting", "status " .. t.status)
  t:cancel()
end)

test("weft.tasks() lists live tasks with what they wait on", function()
  local t = spawn(function() wait(1.25) end)
  t.name = "sleeper"
  local info
  for _, i in ipairs(weft.tasks()) do
    if i.task == t then info = i end
  end
  assert(info, "task not listed")
  assert(info.name == "sleeper", "name " .. tostring(info.name))
  assert(info.status == "waiting", "status " .. tostring(info.status))
  assert(tostring(info.waiting):match("sleep"), "waiting " .. tostring(info.waiting))
  assert(tostring(info.where):match("task_test%.lua:%d+"), "where " .. tostring(info.where))
  assert(tostring(info.spawned):match("task_test%.lua:%d+"), "spawned " .. tostring(info.spawned))
  t:cancel()
  for _, i in ipairs(weft.tasks()) do
    assert(i.task ~= t, "cancelled task still listed")
  end
end)

-- A handle is made when a script first asks for it and is the same value
-- while anyone holds it; what the task needs (its name) never lives only
-- in a handle nobody holds.

local function full_collect()
  for _ = 1, 100 do
    if collectgarbage("step", 1 << 20) then return end
  end
end

test("a task's name stays after the handle it was set through is collected", function()
  spawn(function()
    current().name = "unheld"
    wait(10)
  end)
  full_collect()
  local found
  for _, i in ipairs(weft.tasks()) do
    if i.name == "unheld" then found = i.task end
  end
  assert(found, "the name went with the handle")
  assert(found.name == "unheld", "name " .. tostring(found.name))
  found:cancel()
end)

test("current() is the same value across waits and collections while it is held", function()
  local t = spawn(function()
    local me = current()
    wait()
    full_collect()
    assert(current() == me, "current() changed while held")
    return me
  end)
  assert(wait(t) == t, "the task's own handle differs from spawn's")
end)

test("a task started by a connection gets a handle when its error is reported", function()
  local got = {}
  weft.on_error(function(err, task) got[#got + 1] = {err = err, task = task} end)
  local s = signal()
  s:connect(function() wait(); error("from a connection", 0) end)
  s:fire()
  wait()
  wait()
  weft.on_error(nil)
  assert(#got == 1, "handler called " .. #got .. " times")
  local task = got[1].task
  assert(task ~= nil, "the handler got no task")
  assert(task.status == "failed", "status " .. tostring(task.status))
  assert(task.error == "from a connection", "error " .. tostring(task.error))
  local ok, err = pcall(wait, task)
  assert(not ok and err == "from a connection", "wait gave " .. tostring(err))
end)

test("a task that ends inside spawn: current() there is spawn's result, with its values", function()
  local inside
  local t = spawn(function() inside = current(); return "a", "b" end)
  assert(rawequal(inside, t), "current() inside differs from spawn's handle")
  assert(t.status == "done", "status " .. t.status)
  local a, b = wait(t)
  assert(a == "a" and b == "b", "values " .. tostring(a) .. ", " .. tostring(b))
end)

test("a task that fails inside spawn: the reported handle is spawn's result", function()
  local got = {}
  weft.on_error(function(err, task) got[#got + 1] = task end)
  local t = spawn(function() error("at once", 0) end)
  weft.on_error(nil)
  assert(#got == 1 and rawequal(got[1], t), "the handler got another handle")
  assert(t.status == "failed" and t.error == "at once", "status " .. t.status)
end)

test("tasks spawned inside each other's spawn each get their own handle", function()
  local seen = {}
  local outer = spawn(function()
    seen.outer = current()
    seen.inner = spawn(function() seen.inner_cur = current(); return 2 end)
    seen.outer_after = current()
    return 1
  end)
  assert(rawequal(seen.outer, outer) and rawequal(seen.outer_after, outer), "outer handle changed")
  assert(rawequal(seen.inner, seen.inner_cur), "inner handle differs from current()")
  assert(seen.inner ~= outer, "inner and outer share a handle")
  assert(wait(outer) == 1 and wait(seen.inner) == 2, "values mixed up")
end)

test("a task that ends inside spawn keeps its handle through collections and a spawner's coroutine", function()
  local inside, t
  local co = coroutine.wrap(function()
    t = spawn(function()
      for _ = 1, 200000 do local _ = {} end
      inside = current()
      for _ = 1, 200000 do local _ = {} end
      return "v"
    end)
    coroutine.yield()
  end)
  co()
  assert(rawequal(inside, t), "current() inside differs from spawn's handle")
  assert(wait(t) == "v", "value lost")
end)

test("a task that ended inside spawn with no values takes a name, and keeps it", function()
  local t = spawn(function() end)
  local site = t.name
  assert(site:match("task_test%.lua:%d+$"), "name " .. tostring(site))
  t.name = "quick"
  assert(t.name == "quick" and tostring(t) == "task quick (done)", tostring(t))
  t.name = nil
  assert(t.name == site, "name after clearing " .. tostring(t.name))
  assert(select("#", wait(t)) == 0, "a task with no values gave some")
end)

test("tasks that end inside spawn keep their values and errors, one or several", function()
  local one = spawn(function() return "a" end)
  local many = spawn(function() return 1, nil, 3 end)
  local bad = spawn(function() error("at once", 0) end)
  assert(wait(one) == "a", "one value lost")
  local n = select("#", wait(many))
  local a, b, c = wait(many)
  assert(n == 3 and a == 1 and b == nil and c == 3, "several values lost")
  assert(bad.status == "failed" and bad.error == "at once", "error " .. tostring(bad.error))
  assert(one ~= many and many ~= bad, "handles shared")
end, {reports = true}) -- the failure is meant to reach stderr

test("a task inside spawn whose early handle was dropped still gives spawn its values or its cancel", function()
  local t = spawn(function()
    current()
    for _ = 1, 200000 do local _ = {} end
    return 7
  end)
  assert(wait(t) == 7, "value lost")
  local c = spawn(function()
    current():cancel()
    wait()
  end)
  assert(c.status == "cancelled", "status " .. c.status)
  local ok, err = pcall(wait, c)
  assert(not ok and err == weft.CANCELLED, "wait gave " .. tostring(err))
end)

-- ---- names, errors and weft.tasks(), to the letter ----

local here = require("lib.expect").here

test("a task's default name is its spawn site, for spawn, defer, after and every", function()
  local line = here(); local s = spawn(function() wait() end)
  local d = defer(function() end)
  local a = after(1, function() end)
  local e = every(1, function() end)
  for i, t in ipairs{s, d, a, e} do
    local want = "task_test.lua:" .. (line + i - 1)
    assert(t.name:sub(-#want) == want and t.name:match("[^/]*$") == want,
      "task " .. i .. " is named " .. t.name .. ", not after " .. want)
    t:cancel()
  end
  local named = spawn(function() wait() end)
  named.name = "patrol"
  assert(named.name == "patrol")
  named:cancel()
  assert(named.name == "patrol", "a name set with t.name went when the task ended: " .. named.name)
end)

test("t.error is the value a failed task raised, a cancellation for a cancelled one, nil otherwise", function()
  weft.on_error(function() end)
  local value = {code = 7}
  local failed = spawn(function() wait() error(value) end)
  local waiting = spawn(function() wait(10) end)
  local done = spawn(function() return 1 end)
  assert(failed.error == nil, "a waiting task has an error: " .. tostring(failed.error))
  assert(done.error == nil, "a done task has an error: " .. tostring(done.error))
  local ok, err = pcall(wait, failed)
  assert(not ok and err == value, "wait gave " .. tostring(err))
  assert(rawequal(failed.error, value), "t.error is " .. tostring(failed.error) .. ", not the table raised")
  waiting:cancel()
  assert(weft.is_cancelled(waiting.error), "a cancelled task's error: " .. tostring(waiting.error))
end)

test("weft.tasks() gives id, task, name, group, status, where, spawned and resumes", function()
  local g = group{name = "inspected"}
  local line = here(); local t = g:spawn(function()
    wait()
    wait(math.huge)
  end)
  local function info()
    for _, i in ipairs(weft.tasks()) do
      if i.task == t then return i end
    end
  end
  local i = info()
  assert(math.type(i.id) == "integer", "id is " .. tostring(i.id))
  assert(i.group == "inspected" and i.task.group == g, "group is " .. tostring(i.group))
  assert(i.name == t.name and i.status == "waiting", i.name .. " " .. i.status)
  assert(i.where:match("task_test%.lua:(%d+)$") == tostring(line + 1), "where " .. i.where)
  assert(i.spawned:match("task_test%.lua:(%d+)$") == tostring(line), "spawned " .. i.spawned)
  assert(i.resumes == 1, "resumes " .. tostring(i.resumes))
  local ids = {}
  for _, x in ipairs(weft.tasks()) do
    assert(not ids[x.id], "two tasks share id " .. x.id)
    ids[x.id] = true
  end
  wait()
  i = info()
  assert(i.where:match("task_test%.lua:(%d+)$") == tostring(line + 2), "where after a wait " .. i.where)
  assert(i.resumes == 2, "resumes after a wait " .. tostring(i.resumes))
  t:cancel()
end)

test("weft.tasks() says what each task waits on, in the contract's words", function()
  local f = future()
  local sleeper = spawn(function() wait(1.25) end)
  sleeper.name = "sleeper"
  local cases = {
    {sleeper, "sleep 1.25 s left"},
    {spawn(function() wait(f) end), "future"},
    {spawn(function() wait(sleeper) end), "task sleeper"},
    {spawn(function() wait(math.huge) end), "sleep forever"},
    {spawn(function() wait{f, 2} end), "all 0/2"},
  }
  local function describe(t)
    for _, i in ipairs(weft.tasks()) do
      if i.task == t then return i.waiting end
    end
  end
  for _, c in ipairs(cases) do
    assert(describe(c[1]) == c[2], "waiting " .. tostring(describe(c[1])) .. ", want " .. c[2])
  end
  wait(0.25)
  assert(describe(sleeper) == "sleep 1.00 s left", "after 0.25 s: " .. tostring(describe(sleeper)))
  for _, c in ipairs(cases) do c[1]:cancel() end
end)

test("every with frames longer than its period runs once a frame, then keeps its schedule", function()
  local g = group{time_scale = 30}     -- half a second of group time per frame
  local runs = {}
  local t = g:spawn(function()
    every(0.2, function() runs[#runs + 1] = frame() end)
    wait(math.huge)
  end)
  wait_frames(3)
  -- group clock 0.5, 1.0, 1.5: one run each, no burst for the periods missed
  assert(table.concat(runs, ",") == "1,2,3", "runs at frames " .. table.concat(runs, ","))
  g.time_scale = 1
  wait_frames(30)
  -- the next period after 1.5 is 1.6 (frame 9), then 1.8 (21) and 2.0 (33): no drift
  assert(table.concat(runs, ",") == "1,2,3,9,21,33", "runs at frames " .. table.concat(runs, ","))
  t:cancel()
end)

test("weft.tasks{...} gives a slice, the costliest first or in the list's order, and the count", function()
  local ts = {}
  for i = 1, 50 do ts[i] = spawn(wait, 1e9); ts[i].name = "s" .. i end
  local all = weft.tasks()
  local part, n = weft.tasks{first = 3, count = 5}
  assert(n == #all and #part == 5, "slice " .. #part .. " of " .. tostring(n))
  for i = 1, 5 do assert(part[i].id == all[i + 2].id, "row " .. i .. " is not the list's") end
  -- by cost: as the whole list sorted (ties keep the list's order)
  local top = weft.tasks{by = "avg_ms", count = 4}
  local sorted = {}
  for i, r in ipairs(all) do sorted[i] = {r = r, i = i} end
  table.sort(sorted, function(a, b)
    if a.r.avg_ms ~= b.r.avg_ms then return a.r.avg_ms > b.r.avg_ms end
    return a.i < b.i
  end)
  for i = 1, 4 do assert(top[i].id == sorted[i].r.id, "costliest " .. i) end
  assert(#weft.tasks{first = n + 1} == 0 and #weft.tasks{count = 0} == 0, "empty slices")
  local ok, err = pcall(weft.tasks, {by = "size"})
  assert(not ok and err:find('by must be "ms", "avg_ms" or "worst_ms", got size', 1, true), err)
  assert(not pcall(weft.tasks, {first = 0}) and not pcall(weft.tasks, {count = -1}), "bad bounds")
  assert(#weft.tasks{first = math.maxinteger, count = math.maxinteger} == 0, "far past the end")
  assert(#weft.tasks{first = (1 << 32) + 1, count = 2} == 0, "past 2^32")
  local ok2, err2 = pcall(weft.tasks, {count = "many"})
  assert(not ok2 and err2:find("bad argument #1 to 'weft.tasks' (count must be an integer, got string)", 1, true), err2)
  for _, t in ipairs(ts) do t:cancel() end
end)

test("spawns from one function are sited at their own lines and under their own spawners", function()
  local function two() -- two lines, called again and again, in turn
    local a = spawn(wait, 1e9)
    local b = spawn(wait, 1e9)
    return a, b
  end
  local first = debug.getinfo(two, "S").linedefined + 1
  for round = 1, 3 do
    local a, b = two()
    assert(a.name:match(":(%d+)$") == tostring(first) and b.name:match(":(%d+)$") == tostring(first + 1),
      "round " .. round .. ": " .. a.name .. ", " .. b.name)
    a:cancel()
    b:cancel()
  end
  -- one line, spawned from by two spawners in turn: each failure's report
  -- names its own spawner's line
  local traces = {}
  weft.on_error(function(err, task, trace) traces[#traces + 1] = trace end)
  local function fail() error("boom") end
  local function child() return spawn(fail) end
  local line1 = here(); local p1 = spawn(function() child() wait(1e9) end)
  local line2 = here(); local p2 = spawn(function() child() wait(1e9) end)
  local line3 = here(); local p3 = spawn(function() child() wait(1e9) end)
  wait()
  assert(#traces == 3, "three failures, got " .. #traces)
  for i, line in ipairs{line1, line2, line3} do
    assert(traces[i]:find("task_test.lua:" .. line, 1, true),
      "failure " .. i .. " does not name its spawner's line " .. line .. ":\n" .. traces[i])
  end
  for i, other in ipairs{line2, line3, line1} do
    assert(not traces[i]:find("task_test.lua:" .. other .. "\n", 1, true) and
      not traces[i]:find("task_test.lua:" .. other .. "$"),
      "failure " .. i .. " names another spawner's line " .. other .. ":\n" .. traces[i])
  end
  p1:cancel()
  p2:cancel()
  p3:cancel()
  weft.on_error(nil)
end)

test("weft.sites() counts the live tasks of each spawn site, the most first", function()
  local a, b = {}, {}
  local function many(n) for i = 1, n do a[#a + 1] = spawn(wait, 1e9) end end -- one site
  local function few() for i = 1, 3 do b[i] = spawn(wait, 1e9) end end         -- another
  many(20)
  few()
  local sites = weft.sites()
  local here = debug.getinfo(1, "S").short_src
  assert(sites[1].spawned == here .. ":" .. debug.getinfo(many, "S").linedefined and sites[1].live == 20,
    "the busiest first: " .. tostring(sites[1].spawned) .. " " .. tostring(sites[1].live))
  local found
  for _, s in ipairs(sites) do if s.live == 3 then found = s end end
  assert(found and found.growing == false, "the other site with its count")
  assert(#weft.sites(1) == 1, "a count limits the list")
  for i = 1, 10 do a[i]:cancel() end
  assert(weft.sites()[1].live == 10, "ended tasks leave the count")
  for _, t in ipairs(a) do t:cancel() end
  for _, t in ipairs(b) do t:cancel() end
end)

-- A task's thread is held by the host alone (no table of Lua's holds it):
-- the collector must find it however it runs, and whenever the task was
-- spawned in a cycle (between steps, or in a cycle's last step).
test("a task nobody holds lives through collections of every kind", function()
  local was = collectgarbage("generational")
  for _, mode in ipairs{"generational", "incremental"} do
    collectgarbage(mode)
    local sum, want = 0, 0
    for i = 1, 300 do
      want = want + i
      spawn(function()
        local mine = {i}
        for _ = 1, 3 do
          wait()
          collectgarbage("step", 0)
        end
        wait(0.05)
        sum = sum + mine[1]
      end)
      if i % 50 == 0 then collectgarbage() else collectgarbage("step", 0) end
    end
    collectgarbage()
    wait(0.2)
    assert(sum == want, mode .. ": the tasks added up to " .. sum .. ", not " .. want)
  end
  collectgarbage(was)
end)
