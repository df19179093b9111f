-- Errors: a failure stays in its task, is reported once with its spawn
-- chain, and bad arguments raise clear errors at the caller's line.

local function join(t, sep) return table.concat(t, sep or ",") end

local here = require("lib.expect").here

local expect_error = require("lib.expect").raises
local ended = require("lib.expect").ended

local function silence()
  local got = {}
  weft.on_error(function(err, task, trace) got[#got + 1] = {err = err, task = task, trace = trace} end)
  return got
end

-- ---- failures stay in their task ----

test("an error in a task fails that task only", function()
  silence()
  local n = 0
  local other = spawn(function()
    for _ = 1, 30 do n = n + 1; wait() end
    return "other done"
  end)
  local bad = spawn(function() wait(0.1); error("boom") end)
  assert(wait(other) == "other done", "the other task did not finish")
  assert(n == 30, "the other task ran " .. n .. " times")
  assert(bad.status == "failed", "failing task " .. bad.status)
end)

test("a report quotes a huge message's start and its size; the error stays whole", function()
  local got = silence()
  local huge = ("x"):rep(100000)
  local t = spawn(function() wait(); error(huge, 0) end)
  wait(0.1)
  assert(t.status == "failed" and t.error == huge, "the task's error is the whole message")
  assert(#got == 1 and got[1].err == huge, "the handler gets the error itself")
  local trace = got[1].trace
  assert(#trace < 10000, "the report quotes " .. #trace .. " bytes")
  assert(trace:find("x... (100000 bytes in all)", 1, true), trace:sub(8180, 8240))
end)

test("a cleanup's huge error is quoted the same way", function()
  local got = silence()
  spawn(function()
    local _ <close> = finally(function() error(("y"):rep(100000), 0) end)
  end)
  wait()
  assert(#got >= 1, "no report")
  local trace = got[#got].trace
  assert(#trace < 10000 and trace:find("y... (100000 bytes in all)", 1, true), #trace .. " bytes")
end)

test("a failing task does not fail its parent", function()
  silence()
  local child = spawn(function() wait(); error("child fails") end)
  wait(0.1)
  assert(child.status == "failed", "child " .. child.status)
  assert(current().status == "running", "parent " .. current().status)
end)

test("a failing task's siblings keep running", function()
  silence()
  local log = {}
  local p = spawn(function()
    local a = spawn(function() wait(0.1); error("a fails") end)
    local b = spawn(function() wait(0.2); log[#log + 1] = "b ran"; return "b" end)
    return wait(b)
  end)
  assert(wait(p) == "b", "sibling did not finish")
  assert(join(log) == "b ran", "ran " .. join(log))
end)

-- ---- weft.on_error ----

test("weft.on_error gets err, task and trace once per failure", function()
  local got = silence()
  local t = spawn(function() wait(0.1); error("boom") end)
  pcall(wait, t)
  wait(0.1)
  assert(#got == 1, "handler called " .. #got .. " times")
  local r = got[1]
  assert(type(r.err) == "string" and r.err:match("errors_test%.lua:%d+: boom"), "err " .. tostring(r.err))
  assert(r.task == t, "task handle differs")
  assert(type(r.trace) == "string", "trace is a " .. type(r.trace))
  assert(r.trace:match("stack traceback:"), "no traceback in trace: " .. r.trace)
  assert(r.trace:match("boom"), "no message in trace: " .. r.trace)
end)

test("weft.on_error is called once for each failing task", function()
  local got = silence()
  local ts = {}
  for i = 1, 3 do ts[i] = spawn(function() wait(i / 60); error("fail " .. i) end) end
  wait(0.2)
  assert(#got == 3, "handler called " .. #got .. " times")
  for i = 1, 3 do
    assert(got[i].task == ts[i], "report " .. i .. " is for another task")
    assert(tostring(got[i].err):match("fail " .. i), "report " .. i .. ": " .. tostring(got[i].err))
  end
end)

test("weft.on_error gets a table error unchanged", function()
  local got = silence()
  local e = {code = 42}
  local t = spawn(function() wait(); error(e) end)
  local ok, err = pcall(wait, t)
  assert(#got == 1, "handler called " .. #got .. " times")
  assert(rawequal(got[1].err, e), "handler got " .. tostring(got[1].err))
  assert(rawequal(err, e), "waiter got " .. tostring(err))
end)

test("non-string error values reach the handler and waiters unchanged", function()
  local got = silence()
  local bad_tostring = setmetatable({}, {__tostring = function() error("no") end})
  local values = {42, true, bad_tostring}
  for i, v in ipairs(values) do
    local t = spawn(function() error(v) end)
    local ok, err = pcall(wait, t)
    assert(not ok and rawequal(err, v), "value " .. i .. " changed")
    assert(rawequal(got[i].err, v), "handler value " .. i .. " changed")
  end
  local t = spawn(function() error(nil) end)
  assert(t.status == "failed", "error(nil) left the task " .. t.status)
  assert(#got == 4, "handler called " .. #got .. " times")
end)

test("the trace ends with one spawned-at line per ancestor", function()
  local got = silence()
  local la, lb, lc
  la = here(); local a = spawn(function()
    lb = here(); spawn(function()
      lc = here(); spawn(function()
        wait(0.1)
        error("deep")
      end)
      wait(10)
    end)
    wait(10)
  end)
  wait(0.2)
  assert(#got == 1, "handler called " .. #got .. " times")
  local trace = got[1].trace
  local sites = {}
  for where in trace:gmatch("spawned at ([^\n]+)") do sites[#sites + 1] = where end
  assert(#sites == 3, #sites .. " spawned-at lines in:\n" .. trace)
  assert(sites[1]:match("errors_test%.lua:" .. lc .. "$"), "first site " .. sites[1] .. ", want line " .. lc)
  assert(sites[2]:match("errors_test%.lua:" .. lb .. "$"), "second site " .. sites[2] .. ", want line " .. lb)
  assert(sites[3]:match("errors_test%.lua:" .. la .. "$"), "third site " .. sites[3] .. ", want line " .. la)
  local tb = trace:find("stack traceback:", 1, true)
  local sp = trace:find("spawned at", 1, true)
  assert(tb and sp and tb < sp, "the spawn chain does not follow the traceback")
  assert(trace:match("\nspawned at [^\n]+$"), "trace does not end with a spawned-at line")
  a:cancel()
end)

test("a task's spawn chain survives its parent returning", function()
  local got = silence()
  local lp, lc
  lp = here(); spawn(function()
    lc = here(); spawn(function() wait(0.1); error("orphan") end)
  end)
  wait(0.2)
  local sites = {}
  for where in got[1].trace:gmatch("spawned at ([^\n]+)") do sites[#sites + 1] = where end
  assert(#sites == 2, #sites .. " spawned-at lines: " .. got[1].trace)
  assert(sites[1]:match(":" .. lc .. "$") and sites[2]:match(":" .. lp .. "$"), join(sites, " / "))
end)

test("an on_done callback that fails names the line that set it", function()
  local got = silence()
  local f = future()
  local lo
  local t = spawn(function()
    lo = here(); f:on_done(function() error("callback broke") end)
  end)
  wait(t)
  f:resolve()
  wait()
  assert(#got == 1, "handler called " .. #got .. " times")
  assert(tostring(got[1].err):match("callback broke"), "err " .. tostring(got[1].err))
  local sites = {}
  for where in got[1].trace:gmatch("spawned at ([^\n]+)") do sites[#sites + 1] = where end
  assert(sites[1] and sites[1]:match("errors_test%.lua:" .. lo .. "$"),
    "first site " .. tostring(sites[1]) .. ", want line " .. lo .. " in:\n" .. got[1].trace)
end)

test("an error in weft.on_error does not crash or hide the failure", function()
  local calls = 0
  weft.on_error(function() calls = calls + 1; error("handler broke") end)
  local t = spawn(function() wait(); error("boom") end)
  local ok, err = pcall(wait, t)
  assert(not ok and tostring(err):match("boom"), "err " .. tostring(err))
  assert(calls == 1, "handler called " .. calls .. " times")
  local t2 = spawn(function() wait(); return "still running" end)
  assert(wait(t2) == "still running", "host stopped running tasks")
  weft.on_error(nil)
end, {reports = true}) -- the failure is meant to reach stderr

test("weft.on_error(nil) removes the handler", function()
  local calls = 0
  weft.on_error(function() calls = calls + 1 end)
  weft.on_error(nil)
  local t = spawn(function() error("unhandled (expected on stderr)") end)
  assert(calls == 0, "removed handler called")
  assert(t.status == "failed", "status " .. t.status)
end, {reports = true}) -- the failure is meant to reach stderr

test("weft.on_error is not called for a cancelled task", function()
  local got = silence()
  local t = spawn(function() wait(10) end)
  t:cancel()
  local w = spawn(function() pcall(wait, t) end)
  wait()
  assert(#got == 0, "handler called " .. #got .. " times")
end)

test("weft.on_error rejects a non-function", function()
  expect_error(here(), function() weft.on_error(42) end, "function")
end)

-- ---- bad arguments ----

test("wait('x') raises at the caller's line", function()
  expect_error(here(), function() wait("x") end, "string")
end)

test("wait(0/0) raises at the caller's line", function()
  expect_error(here(), function() wait(0 / 0) end, "nan")
end)

test("wait{'x'} raises at the caller's line", function()
  expect_error(here(), function() wait{"x"} end, "string")
end)

test("wait{0/0} raises at the caller's line", function()
  expect_error(here(), function() wait{0.1, 0 / 0} end, "nan")
end)

test("wait(true), wait(print) and wait(coroutine) raise", function()
  expect_error(here(), function() wait(true) end, "boolean")
  expect_error(here(), function() wait(print) end, "function")
  expect_error(here(), function() wait(coroutine.create(print)) end, "thread")
  expect_error(here(), function() wait(group{}) end, "cannot wait on")
end)

test("a failed wait leaves the task able to wait again", function()
  pcall(wait, "x")
  pcall(wait, {0.1, "x"})
  local f = frame()
  wait(0.5)
  assert(frame() == f + 30, "woke on frame " .. frame() .. " after " .. f)
end)

test("spawn(42) raises at the caller's line", function()
  expect_error(here(), function() spawn(42) end, "function expected")
end)

test("spawn() raises at the caller's line", function()
  expect_error(here(), function() spawn() end, "expected")
end)

test("defer(nil) raises at the caller's line", function()
  expect_error(here(), function() defer(nil) end, "function expected")
end)

test("after('a', f) raises at the caller's line", function()
  expect_error(here(), function() after("a", print) end, "number expected")
end)

test("after(1, 'f') raises at the caller's line", function()
  expect_error(here(), function() after(1, "f") end, "function expected")
end)

test("after(0/0, f) raises at the caller's line", function()
  expect_error(here(), function() after(0 / 0, print) end, "nan")
end)

test("every(0, f) raises at the caller's line", function()
  expect_error(here(), function() every(0, print) end, "positive")
end)

test("every(-1, f), every(math.huge, f) and every(0/0, f) raise", function()
  expect_error(here(), function() every(-1, print) end, "positive")
  expect_error(here(), function() every(math.huge, print) end, "finite")
  expect_error(here(), function() every(0 / 0, print) end, "nan")
end)

test("every(1, nil) raises at the caller's line", function()
  expect_error(here(), function() every(1, nil) end, "function expected")
end)

test("wait_frames(-1) raises at the caller's line", function()
  expect_error(here(), function() wait_frames(-1) end, "wait_frames")
end)

test("wait_frames(1.5) and wait_frames('x') raise", function()
  expect_error(here(), function() wait_frames(1.5) end, "whole number")
  expect_error(here(), function() wait_frames("x") end, "whole number")
end)

test("wait_until(5) raises at the caller's line", function()
  expect_error(here(), function() wait_until(5) end, "function expected")
end)

test("wait_while(nil) raises at the caller's line", function()
  expect_error(here(), function() wait_while(nil) end, "function expected")
end)

test("wait_realtime('x') and wait_realtime(0/0) raise", function()
  expect_error(here(), function() wait_realtime("x") end, "number expected")
  expect_error(here(), function() wait_realtime(0 / 0) end, "nan")
end)

test("group{time_scale=-1} raises at the caller's line", function()
  expect_error(here(), function() group{time_scale = -1} end, "time_scale")
end)

test("group(42) raises at the caller's line", function()
  expect_error(here(), function() group(42) end, "table expected")
end)

test("time_scale('fast') and time_scale(-1) raise", function()
  expect_error(here(), function() time_scale("fast") end, "number expected")
  expect_error(here(), function() time_scale(-1) end, "time scale")
end)

test("t.cancel() without self raises at the caller's line", function()
  local t = spawn(function() wait(10) end)
  expect_error(here(), function() t.cancel() end, "task expected")
  assert(t.status == "waiting", "t was cancelled anyway")
  t:cancel()
end)

test("t.cancel(42) raises at the caller's line", function()
  local t = spawn(function() wait(10) end)
  expect_error(here(), function() t.cancel(42) end, "task expected")
  t:cancel()
end)

test("g.spawn() without self raises at the caller's line", function()
  local g = group{}
  expect_error(here(), function() g.spawn(function() end) end, "group expected")
end)

test("g.pause(), g.resume(), g.cancel() and g.tasks() without self raise", function()
  local g = group{}
  expect_error(here(), function() g.pause() end, "group expected")
  expect_error(here(), function() g.resume() end, "group expected")
  expect_error(here(), function() g.cancel() end, "group expected")
  expect_error(here(), function() g.tasks() end, "group expected")
end)

test("setting an unknown group field raises", function()
  local g = group{}
  expect_error(here(), function() g.speed = 2 end, "speed")
end)

test("wait in a sort comparator raises instead of crashing", function()
  expect_error(here(), function() table.sort({3, 2, 1}, function(a, b) wait() return a < b end) end, "wait")
  wait() -- the task can still wait afterwards
end)

test("wait in a plain coroutine inside a task raises a clear error", function()
  local co = coroutine.wrap(function() wait() end)
  expect_error(here(), function() co() end, "task")
end)

test("plain coroutines still yield normally inside a task", function()
  local gen = coroutine.wrap(function()
    for i = 1, 3 do coroutine.yield(i) end
  end)
  local f = frame()
  assert(gen() == 1 and gen() == 2 and gen() == 3, "generator broke")
  assert(frame() == f, "a plain coroutine yield made the task wait")
end)

test("a task's own thread cannot be resumed directly", function()
  -- a task handle is not a coroutine; coroutine.running() inside a task
  local co = coroutine.running()
  local ok, err = pcall(coroutine.resume, co)
  assert(not ok or err ~= nil, "resuming a task's thread succeeded")
end)

-- ---- budgets ----

test("a runaway loop is killed with an error at its line; others keep running", function()
  local got = silence()
  local n = 0
  local other = spawn(function() for _ = 1, 10 do n = n + 1; wait() end end)
  local line
  line = here(); local t = spawn(function() while true do end end)
  assert(ended(t) == "failed", "runaway task " .. t.status)
  assert(#got == 1, "reported " .. #got .. " times")
  assert(tostring(got[1].err):match("errors_test%.lua:" .. line .. ":"),
    "error does not name line " .. line .. ": " .. tostring(got[1].err))
  assert(n == 10, "other task ran " .. n .. " times")
end)

test("pcall does not swallow the kill of a runaway loop", function()
  silence()
  local t = spawn(function()
    while true do pcall(function() while true do end end) end
  end)
  assert(ended(t) == "failed", "runaway task " .. t.status)
end)

test("a task started after a runaway was killed is still held to the budget", function()
  local got = silence()
  local t1 = spawn(function() while true do end end)
  assert(ended(t1) == "failed", "first runaway " .. t1.status)
  -- The next spawn may get the killed task's thread back: it must come
  -- with its budget (a loop of 1e9 steps is far over the runaway limit).
  local t2 = spawn(function() for _ = 1, 1e9 do end return "finished" end)
  assert(ended(t2) == "failed", "second runaway " .. t2.status)
  assert(tostring(t2.error):match("too long"), tostring(t2.error))
  assert(#got == 2, "reported " .. #got .. " times")
end)

test("a task whose children fail in a loop is still held to the budget", function()
  local got = silence() -- the handler runs for every failure, on a thread of its own
  -- A child fails every ~10,000 instructions, far more often than a budget
  -- (1e6) runs out: were a failure's report to reset the budget, the task
  -- would never be stopped and would finish its 100,000 rounds (1e9
  -- instructions, far over the runaway limit) instead.
  local t = spawn(function()
    for _ = 1, 100000 do
      spawn(function() error("x") end)
      for _ = 1, 10000 do end
    end
  end)
  ended(t)
  assert(t.status == "failed" and tostring(t.error):match("too long"), t.status .. " " .. tostring(t.error))
  assert(#got > 1000, "only " .. #got .. " children failed before the task was stopped")
end)

test("a wait in a cleanup says that cleanups cannot wait", function()
  local got = silence()
  local ok, e = pcall(function() local _ <close> = finally(function() wait(1) end) end)
  assert(ok, "the cleanup's error is reported, not raised: " .. tostring(e))
  assert(#got == 1 and tostring(got[1].err):match("cannot wait in a cleanup"), tostring(got[1] and got[1].err))
end)

test("a task that exhausts memory fails with file:line: not enough memory; others keep running", function()
  local got = silence()
  local other = spawn(function() wait(0.2); return "alive" end)
  local t = spawn(function()
    local hoard = {}
    pcall(function() -- big pieces until one no longer fits
      for i = 1, 1e6 do
        hoard[i] = string.rep("x", 1 << 16) .. i
        if i % 50 == 0 then wait() end
      end
    end)
    local list = nil -- then small ones: the limit is reached to the byte
    while true do list = { list } end
  end)
  local ok, err = pcall(wait, t)
  assert(not ok and tostring(err):match("errors_test%.lua:%d+: not enough memory"), "err " .. tostring(err))
  assert(wait(other) == "alive", "the other task died")
  local after = spawn(function() return #string.rep("y", 1000) end)
  assert(wait(after) == 1000, "cannot allocate after the failure")
end)

-- ---- who a report names ----

test("a report names the task's entity (its named group) first", function()
  local got = silence()
  local guard = group{ name = "gate_guard" }
  local t = guard:spawn(function() wait(); error("boom") end)
  pcall(wait, t)
  assert(#got == 1, #got .. " reports")
  assert(got[1].trace:find("^gate_guard: .*errors_test%.lua:%d+: boom"), "trace: " .. got[1].trace)
  assert(not got[1].err:find("gate_guard"), "the error value changed: " .. got[1].err)
end)

test("a report names a task's own name first when a script gave it one", function()
  local got = silence()
  local t = spawn(function() wait(); error("stuck") end)
  t.name = "door opener"
  pcall(wait, t)
  assert(got[1].trace:find("^door opener: .*errors_test%.lua:%d+: stuck"), "trace: " .. got[1].trace)
end)

test("a task started by weft.start in an entity's group is reported under the entity", function()
  local got = silence()
  local gardener = group{ name = "old_bram" }
  local t = gardener:start("ai.idle", { name = "old_bram" })   -- no position verb here: fails
  pcall(wait, t)
  assert(#got == 1, #got .. " reports")
  assert(got[1].trace:find("^old_bram: scripts/ai/idle%.lua:%d+:"), "trace: " .. got[1].trace)
end)

test("weft.tasks() gives each task's entity as who", function()
  local guard = group{ name = "well_guard" }
  local t = guard:spawn(function() wait(math.huge) end)
  local loose = spawn(function() wait(math.huge) end)
  local who = {}
  for _, x in ipairs(weft.tasks()) do who[x.task] = x.who or false end
  assert(who[t] == "well_guard", "who: " .. tostring(who[t]))
  assert(who[loose] == false, "a task outside any named group has no who: " .. tostring(who[loose]))
  t:cancel(); loose:cancel()
end)
