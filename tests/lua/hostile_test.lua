-- Hostile input: every binding checks its arguments and raises at the
-- script's line; odd error values, __gc and __close errors, runaway loops,
-- memory hogs and deep recursion stay inside the task that caused them.
-- One case per input. Cases that would hang or crash the host if the
-- contract were broken carry a guard so that they fail instead (noted
-- where they do).

local NaN, inf = 0 / 0, math.huge

local here = require("lib.expect").here

local raises = require("lib.expect").raises
local ended = require("lib.expect").ended

-- Captures weft.on_error reports.
local function capture()
  local got = {}
  weft.on_error(function(err, task, trace)
    got[#got + 1] = {err = err, task = task, trace = trace}
  end)
  return got
end

-- A task that counts frames, to show the rest keeps running.
local function ticker()
  local c = {n = 0}
  c.task = spawn(function() while true do c.n = c.n + 1; wait() end end)
  return c
end

local function full_gc()
  for _ = 1, 3 do
    for _ = 1, 10000 do if collectgarbage("step", 1000) then break end end
  end
end

-- ======================================================================
-- wait
-- ======================================================================

test("wait('x') raises at the caller's line", function()
  raises(here(), function() wait("x") end, "cannot wait on a string")
end)

test("wait(true) raises at the caller's line", function()
  raises(here(), function() wait(true) end, "cannot wait on a boolean")
end)

test("wait(print) raises at the caller's line", function()
  raises(here(), function() wait(print) end, "cannot wait on a function")
end)

test("wait(NaN) raises at the caller's line", function()
  raises(here(), function() wait(NaN) end, "nan")
end)

test("wait{NaN} raises at the caller's line", function()
  raises(here(), function() wait{0.1, NaN} end, "nan")
end)

test("wait{'x'} raises at the caller's line", function()
  raises(here(), function() wait{0.1, "x"} end, "cannot wait on a string")
end)

test("wait(list of 100,000) raises at the caller's line", function()
  local big = {}
  for i = 1, 100000 do big[i] = 0.1 end
  raises(here(), function() wait(big) end, "list too long")
end)

test("wait(list) takes up to 65,535 elements and raises past that", function()
  local big = {}
  for i = 1, 65535 do big[i] = 0 end
  assert(select("#", wait(big)) == 65535)
  big[65536] = 0
  raises(here(), function() wait(big) end, "list too long")
end)

test("wait(-1) and wait(-inf) wake on the next frame", function()
  local f = frame()
  wait(-1)
  assert(frame() == f + 1, "wait(-1) woke on frame " .. frame() .. " after " .. f)
  wait(-inf)
  assert(frame() == f + 2, "wait(-inf) woke on frame " .. frame() .. " after " .. f + 1)
end)

test("wait(inf) and wait(1e300) sleep until cancelled", function()
  local a = spawn(function() wait(inf) end)
  local b = spawn(function() wait(1e300) end)
  wait(1)
  assert(a.status == "waiting" and b.status == "waiting", a.status .. ", " .. b.status)
  a:cancel()
  b:cancel()
  assert(a.status == "cancelled" and b.status == "cancelled", a.status .. ", " .. b.status)
end)

test("a failed wait leaves the task able to wait again", function()
  pcall(wait, NaN)
  pcall(wait, {0.1, "x"})
  local f = frame()
  wait(0.5)
  assert(frame() == f + 30, "woke on frame " .. frame() .. " after " .. f)
end)

-- ======================================================================
-- wait_frames, wait_until, wait_while, wait_realtime
-- ======================================================================

test("wait_frames(nil) raises at the caller's line", function()
  raises(here(), function() wait_frames(nil) end, "whole number")
end)

test("wait_frames('x') raises at the caller's line", function()
  raises(here(), function() wait_frames("x") end, "whole number")
end)

test("wait_frames(NaN) raises at the caller's line", function()
  raises(here(), function() wait_frames(NaN) end, "whole number")
end)

test("wait_frames(-1) raises at the caller's line", function()
  raises(here(), function() wait_frames(-1) end, "whole number")
end)

test("wait_frames(1.5) raises at the caller's line", function()
  raises(here(), function() wait_frames(1.5) end, "whole number")
end)

test("wait_frames(inf) raises at the caller's line", function()
  raises(here(), function() wait_frames(inf) end, "whole number")
end)

test("wait_frames(-inf) raises at the caller's line", function()
  raises(here(), function() wait_frames(-inf) end, "whole number")
end)

test("wait_until(nil) raises at the caller's line", function()
  raises(here(), function() wait_until(nil) end, "function expected")
end)

test("wait_until(5) raises at the caller's line", function()
  raises(here(), function() wait_until(5) end, "function expected")
end)

test("wait_while('x') raises at the caller's line", function()
  raises(here(), function() wait_while("x") end, "function expected")
end)

test("wait_realtime('x') raises at the caller's line", function()
  raises(here(), function() wait_realtime("x") end, "number expected")
end)

test("wait_realtime(nil) raises at the caller's line", function()
  raises(here(), function() wait_realtime(nil) end, "number expected")
end)

test("wait_realtime(NaN) raises at the caller's line", function()
  raises(here(), function() wait_realtime(NaN) end, "nan")
end)

test("wait_realtime(inf) sleeps until cancelled", function()
  local t = spawn(function() wait_realtime(inf) end)
  wait(0.5)
  assert(t.status == "waiting", t.status)
  t:cancel()
  assert(t.status == "cancelled", t.status)
end)

-- ======================================================================
-- spawn, defer, after, every, finally
-- ======================================================================

test("spawn(nil) raises at the caller's line", function()
  raises(here(), function() spawn(nil) end, "function expected")
end)

test("spawn(42) raises at the caller's line", function()
  raises(here(), function() spawn(42) end, "function expected")
end)

test("spawn('f') raises at the caller's line", function()
  raises(here(), function() spawn("f") end, "function expected")
end)

test("spawn({}) raises at the caller's line", function()
  raises(here(), function() spawn({}) end, "function expected")
end)

test("spawn(NaN) raises at the caller's line", function()
  raises(here(), function() spawn(NaN) end, "function expected")
end)

test("defer(nil) raises at the caller's line", function()
  raises(here(), function() defer(nil) end, "function expected")
end)

test("defer(42) raises at the caller's line", function()
  raises(here(), function() defer(42) end, "function expected")
end)

test("after('a', f) raises at the caller's line", function()
  raises(here(), function() after("a", print) end, "number expected")
end)

test("after(NaN, f) raises at the caller's line", function()
  raises(here(), function() after(NaN, print) end, "nan")
end)

test("after(1, nil) raises at the caller's line", function()
  raises(here(), function() after(1, nil) end, "function expected")
end)

test("after(1, 42) raises at the caller's line", function()
  raises(here(), function() after(1, 42) end, "function expected")
end)

test("after(-1, f) runs on the next frame", function()
  local ran
  after(-1, function() ran = frame() end)
  local f = frame()
  wait()
  assert(ran == f + 1, "ran on frame " .. tostring(ran) .. ", want " .. f + 1)
end)

test("after(inf, f) never runs and can be cancelled", function()
  local ran = false
  local t = after(inf, function() ran = true end)
  wait(1)
  assert(not ran and t.status == "waiting", "ran " .. tostring(ran) .. ", " .. t.status)
  t:cancel()
end)

test("every(0, f) raises at the caller's line", function()
  raises(here(), function() every(0, print) end, "positive")
end)

test("every(-1, f) raises at the caller's line", function()
  raises(here(), function() every(-1, print) end, "positive")
end)

test("every(inf, f) raises at the caller's line", function()
  raises(here(), function() every(inf, print) end, "finite")
end)

test("every(-inf, f) raises at the caller's line", function()
  raises(here(), function() every(-inf, print) end, "positive")
end)

test("every(NaN, f) raises at the caller's line", function()
  raises(here(), function() every(NaN, print) end, "nan")
end)

test("every('x', f) raises at the caller's line", function()
  raises(here(), function() every("x", print) end, "positive")
end)

test("every(1, nil) raises at the caller's line", function()
  raises(here(), function() every(1, nil) end, "function expected")
end)

test("finally(nil) raises at the caller's line", function()
  raises(here(), function() local _ <close> = finally(nil) end, "function expected")
end)

test("finally(42) raises at the caller's line", function()
  raises(here(), function() local _ <close> = finally(42) end, "function expected")
end)

-- ======================================================================
-- time_scale, group
-- ======================================================================

test("time_scale('fast') raises at the caller's line", function()
  raises(here(), function() time_scale("fast") end, "number expected")
end)

test("time_scale(-1) raises at the caller's line", function()
  raises(here(), function() time_scale(-1) end, "time scale")
end)

test("time_scale(NaN) raises at the caller's line", function()
  raises(here(), function() time_scale(NaN) end, "time scale")
end)

test("time_scale(inf) raises at the caller's line", function()
  raises(here(), function() time_scale(inf) end, "time scale")
end)

test("time_scale(1e12) raises at the caller's line", function()
  raises(here(), function() time_scale(1e12) end, "between 0 and 1e6")
end)

test("group{time_scale = 1e7} raises at the caller's line", function()
  raises(here(), function() group{time_scale = 1e7} end, "between 0 and 1e6")
end)

test("nested groups at the largest scales keep their timers working", function()
  local outer = group{time_scale = 1e6}
  local inner = group{time_scale = 1e6, parent = outer}
  local woke = false
  inner:spawn(function() wait(1) woke = true end)
  wait()
  wait()
  assert(woke, "a 1 s timer on a clock running 1e12 times fast never woke")
  outer:cancel()
end)

test("time_scale(-inf) raises at the caller's line", function()
  raises(here(), function() time_scale(-inf) end, "time scale")
end)

test("a rejected time_scale leaves the clock as it was", function()
  pcall(time_scale, NaN)
  pcall(time_scale, inf)
  assert(time_scale() == 1, "time scale is now " .. tostring(time_scale()))
end)

test("group(42) raises at the caller's line", function()
  raises(here(), function() group(42) end, "table expected")
end)

test("group('x') raises at the caller's line", function()
  raises(here(), function() group("x") end, "table expected")
end)

test("group{time_scale = NaN} raises at the caller's line", function()
  raises(here(), function() group{time_scale = NaN} end, "time_scale")
end)

test("group{time_scale = inf} raises at the caller's line", function()
  raises(here(), function() group{time_scale = inf} end, "time_scale")
end)

test("group{time_scale = -1} raises at the caller's line", function()
  raises(here(), function() group{time_scale = -1} end, "time_scale")
end)

test("group{time_scale = -inf} raises at the caller's line", function()
  raises(here(), function() group{time_scale = -inf} end, "time_scale")
end)

test("group{time_scale = 'x'} raises at the caller's line", function()
  raises(here(), function() group{time_scale = "x"} end, "time_scale")
end)

test("group{name = 42} raises at the caller's line", function()
  raises(here(), function() group{name = 42} end, "name")
end)

test("group{parent = 42} raises at the caller's line", function()
  raises(here(), function() group{parent = 42} end, "parent")
end)

-- ======================================================================
-- future, signal, channel, first, all, timeout
-- ======================================================================

test("signal(42) raises at the caller's line", function()
  raises(here(), function() signal(42) end, "string expected")
end)

test("signal({}) raises at the caller's line", function()
  raises(here(), function() signal({}) end, "string expected")
end)

test("channel(-1) raises at the caller's line", function()
  raises(here(), function() channel(-1) end, "capacity")
end)

test("channel(NaN) raises at the caller's line", function()
  raises(here(), function() channel(NaN) end, "integer")
end)

test("channel(inf) raises at the caller's line", function()
  raises(here(), function() channel(inf) end, "integer")
end)

test("channel(-inf) raises at the caller's line", function()
  raises(here(), function() channel(-inf) end, "integer")
end)

test("channel(1.5) raises at the caller's line", function()
  raises(here(), function() channel(1.5) end, "integer")
end)

test("channel(2^31) raises at the caller's line", function()
  raises(here(), function() channel(2 ^ 31) end, "capacity")
end)

test("channel(2^62) raises at the caller's line", function()
  raises(here(), function() channel(1 << 62) end, "capacity")
end)

test("channel('x') raises at the caller's line", function()
  raises(here(), function() channel("x") end, "number expected")
end)

test("channel({}) raises at the caller's line", function()
  raises(here(), function() channel({}) end, "number expected")
end)

test("first{} raises at the caller's line", function()
  raises(here(), function() first{} end, "empty list")
end)

test("timeout(nil, 1) raises at the caller's line", function()
  raises(here(), function() timeout(nil, 1) end, "got nil")
end)

test("first(nil) raises at the caller's line", function()
  raises(here(), function() first(nil) end, "list expected")
end)

test("first(42) raises at the caller's line", function()
  raises(here(), function() first(42) end, "list expected")
end)

test("first{'x'} raises at the caller's line", function()
  raises(here(), function() first{"x"} end, "cannot wait on a string")
end)

test("first{NaN} raises at the caller's line", function()
  raises(here(), function() first{NaN} end, "nan")
end)

test("all('x') raises at the caller's line", function()
  raises(here(), function() all("x") end, "list expected")
end)

test("all{true} raises at the caller's line", function()
  raises(here(), function() all{true} end, "cannot wait on a boolean")
end)

test("all(list) takes up to 65,535 elements and raises past that", function()
  local big = {}
  for i = 1, 65535 do big[i] = 0 end
  assert(#wait(all(big)) == 65535)
  big[65536] = 0
  raises(here(), function() all(big) end, "list too long")
end)

test("all(list of 100,000) raises at the caller's line", function()
  local big = {}
  for i = 1, 100000 do big[i] = 0.1 end
  raises(here(), function() all(big) end, "list too long")
end)

test("timeout(f, NaN) raises at the caller's line", function()
  raises(here(), function() timeout(future(), NaN) end, "nan")
end)

test("timeout(f, 'x') raises at the caller's line", function()
  raises(here(), function() timeout(future(), "x") end, "number expected")
end)

test("timeout() raises at the caller's line", function()
  raises(here(), function() timeout() end, "something to wait on expected")
end)

test("timeout('x', 1) raises at the caller's line", function()
  raises(here(), function() timeout("x", 1) end, "cannot wait on a string")
end)

-- ======================================================================
-- job, require, persist, weft.*, load, collectgarbage
-- ======================================================================

test("job(nil) raises at the caller's line", function()
  raises(here(), function() job(nil) end, "string expected")
end)

test("job(42) raises at the caller's line", function()
  raises(here(), function() job(42) end, "no job kind")
end)

test("job('nope') raises at the caller's line", function()
  raises(here(), function() job("nope") end, "no job kind")
end)

test("job('read_file') raises at the caller's line", function()
  raises(here(), function() job("read_file") end, "path")
end)

test("job('read_file', '/etc/passwd') raises at the caller's line", function()
  raises(here(), function() job("read_file", "/etc/passwd") end, "relative")
end)

test("job('read_file', '../x') raises at the caller's line", function()
  raises(here(), function() job("read_file", "levels/../../x") end, "relative")
end)

test("job('read_file', {}) raises at the caller's line", function()
  raises(here(), function() job("read_file", {}) end, "string expected")
end)

test("job('find_path', 42) raises at the caller's line", function()
  raises(here(), function() job("find_path", 42, 1, 1, 1, 1) end, "table expected")
end)

test("job('find_path', grid, NaN, ...) raises at the caller's line", function()
  raises(here(), function() job("find_path", {"...."}, NaN, 1, 1, 1) end, "integer")
end)

test("job('find_path', grid, 0, ...) raises at the caller's line", function()
  raises(here(), function() job("find_path", {"...."}, 0, 1, 1, 1) end, "outside the grid")
end)

test("job('find_path', grid, inf, ...) raises at the caller's line", function()
  raises(here(), function() job("find_path", {"...."}, 1, 1, inf, 1) end, "integer")
end)

test("job('find_path', grid, -1, ...) raises at the caller's line", function()
  raises(here(), function() job("find_path", {"...."}, 1, -1, 1, 1) end, "outside the grid")
end)

test("job('find_path', {}) raises at the caller's line", function()
  raises(here(), function() job("find_path", {}, 1, 1, 1, 1) end, "rows")
end)

test("job('find_path', 5,000 rows) raises at the caller's line", function()
  local rows = {}
  for i = 1, 5000 do rows[i] = "." end
  raises(here(), function() job("find_path", rows, 1, 1, 1, 1) end, "rows")
end)

test("job('find_path', a 5,000-column row) raises at the caller's line", function()
  raises(here(), function() job("find_path", {("."):rep(5000)}, 1, 1, 1, 1) end, "columns")
end)

test("require(nil) raises at the caller's line", function()
  raises(here(), function() require(nil) end, "require")
end)

test("require(42) raises at the caller's line", function()
  raises(here(), function() require(42) end, "require")
end)

test("require('../x') raises at the caller's line", function()
  raises(here(), function() require("../x") end, "require")
end)

test("require('no.such.module') raises at the caller's line", function()
  raises(here(), function() require("no.such.module") end, "not found")
end)

test("persist(nil) raises at the caller's line", function()
  raises(here(), function() persist(nil) end, "string expected")
end)

test("persist(42) raises at the caller's line", function()
  raises(here(), function() persist(42) end, "string expected")
end)

test("weft.start(nil) raises at the caller's line", function()
  raises(here(), function() weft.start(nil) end, "module name expected")
end)

test("weft.start(42) raises at the caller's line", function()
  raises(here(), function() weft.start(42) end, "module name expected")
end)

test("weft.start('no.such.module') raises at the caller's line", function()
  raises(here(), function() weft.start("no.such.module") end, "not found")
end)

test("weft.on_error(42) raises at the caller's line", function()
  raises(here(), function() weft.on_error(42) end, "function expected")
end)

test("weft.on_error('x') raises at the caller's line", function()
  raises(here(), function() weft.on_error("x") end, "function expected")
end)

test("load(nil) raises at the caller's line, as plain Lua does", function()
  raises(here(), function() load(nil) end, "bad argument #1 to 'load' %(function expected, got nil%)")
end)

test("load(text, name, 'b') fails as plain Lua does", function()
  local f, msg = load("return 1", "x", "b")
  assert(f == nil and msg == "attempt to load a text chunk (mode is 'b')", tostring(msg))
end)

test("collectgarbage's options answer as Lua's: the collector can be stopped and run in full", function()
  assert(collectgarbage("collect") == 0 and collectgarbage() == 0, "collect")
  assert(collectgarbage("isrunning") == true, "running")
  assert(collectgarbage("stop") == 0 and collectgarbage("isrunning") == false, "stop")
  assert(collectgarbage("restart") == 0 and collectgarbage("isrunning") == true, "restart")
  assert(collectgarbage("incremental") == "incremental", "mode")
  assert(math.type(collectgarbage("setpause", 200)) == "integer", "setpause")
  assert(math.type(collectgarbage("setstepmul", 100)) == "integer", "setstepmul")
end)

test("collectgarbage(42) raises at the caller's line", function()
  raises(here(), function() collectgarbage(42) end, "invalid option")
end)

test("collectgarbage('step', NaN) raises at the caller's line", function()
  raises(here(), function() collectgarbage("step", NaN) end, "integer")
end)

test("collectgarbage('step', inf) raises at the caller's line", function()
  raises(here(), function() collectgarbage("step", inf) end, "integer")
end)

test("collectgarbage('step', -1) and a huge step do not crash", function()
  collectgarbage("step", -1)
  collectgarbage("step", 1 << 40)
  collectgarbage("step", math.maxinteger)
  collectgarbage("step", math.mininteger)
end)

test("functions that take no arguments ignore junk ones", function()
  for _, fn in ipairs{current, now, realtime, frame, future, weft.tasks, weft.modules,
                      weft.reload_errors, weft.is_cancelled} do
    local ok, err = pcall(fn, NaN, inf, -inf, {}, nil, 1 << 62)
    assert(ok, tostring(err))
  end
  assert(time_scale(nil) == 1)
end)

test("string.rep with a huge count fails cleanly", function()
  local ok, err = pcall(string.rep, "x", 1 << 40)
  assert(not ok and tostring(err):match("too large"), "rep(2^40): " .. tostring(err))
  ok, err = pcall(string.rep, "x", 1 << 32) -- a count a 32-bit size_t cannot hold
  assert(not ok and tostring(err):match("too large"), "rep(2^32): " .. tostring(err))
  assert(string.rep("", 1 << 32) == "" and string.rep("", (1 << 32) + 1, "") == "", "rep of nothing")
  ok, err = pcall(string.rep, "x", 1e9)
  assert(not ok and tostring(err):match("not enough memory"), "rep(1e9): " .. tostring(err))
  ok, err = pcall(string.rep, "abc", 1 << 62, ",")
  assert(not ok and tostring(err):match("too large"), "rep(2^62, sep): " .. tostring(err))
  ok, err = pcall(string.rep, "x", inf)
  assert(not ok and tostring(err):match("integer"), "rep(inf): " .. tostring(err))
  local t = {}
  for i = 1, 1000 do t[i] = ("y"):rep(100) end -- the task can still allocate
  assert(#t[1000] == 100)
end)

test("a large string.rep is made in pieces: the task is preempted between two and goes on", function()
  local f0 = frame()
  local s = string.rep("ab", 30 << 20, ",")
  assert(#s == 3 * (30 << 20) - 1 and s:sub(-5) == "ab,ab", "the result")
  assert(frame() > f0, "made in one go")
end)

test("table.unpack with a huge count fails cleanly", function()
  local ok, err = pcall(table.unpack, {}, 1, 1 << 40)
  assert(not ok and tostring(err):match("too many results"), "unpack: " .. tostring(err))
end)

-- ======================================================================
-- methods called with a wrong self, without self, with bad values
-- ======================================================================

test("t.cancel(g) raises at the caller's line", function()
  local t = spawn(function() wait(10) end)
  local g = group{}
  raises(here(), function() t.cancel(g) end, "task expected")
  assert(t.status == "waiting", "t was cancelled anyway")
  t:cancel()
end)

test("t.cancel() raises at the caller's line", function()
  local t = spawn(function() wait(10) end)
  raises(here(), function() t.cancel() end, "task expected")
  t:cancel()
end)

test("t.status = 'done' raises at the caller's line", function()
  local t = spawn(function() wait(10) end)
  raises(here(), function() t.status = "done" end, "read%-only")
  assert(t.status == "waiting", t.status)
  t:cancel()
end)

test("t.name = {} raises at the caller's line", function()
  local t = spawn(function() wait(10) end)
  raises(here(), function() t.name = {} end, "string expected")
  t:cancel()
end)

test("t[{}] does not crash", function()
  local t = spawn(function() wait(10) end)
  pcall(function() return t[{}] end)
  pcall(function() return t[nil] end)
  assert(t[1] == nil)
  t:cancel()
end)

test("f.resolve(s) raises at the caller's line", function()
  local f, s = future(), signal()
  raises(here(), function() f.resolve(s, 1) end, "future expected")
  assert(f.state == "pending", f.state)
end)

test("f.resolve() raises at the caller's line", function()
  local f = future()
  raises(here(), function() f.resolve() end, "future expected")
end)

test("f.fail(ch) raises at the caller's line", function()
  local f = future()
  raises(here(), function() f.fail(channel(), "x") end, "future expected")
end)

test("f.cancel(t) raises at the caller's line", function()
  local f = future()
  raises(here(), function() f.cancel(current()) end, "future expected")
end)

test("f.result(g) raises at the caller's line", function()
  local f = future()
  raises(here(), function() f.result(group{}) end, "future expected")
end)

test("f.done(42) raises at the caller's line", function()
  local f = future()
  raises(here(), function() f.done(42) end, "future expected")
end)

test("f:on_done(42) raises at the caller's line", function()
  local f = future()
  raises(here(), function() f:on_done(42) end, "function expected")
end)

test("f.on_done(s, fn) raises at the caller's line", function()
  local f = future()
  raises(here(), function() f.on_done(signal(), print) end, "future expected")
end)

test("f:resolve() twice raises at the caller's line", function()
  local f = future()
  f:resolve(1)
  raises(here(), function() f:resolve(2) end, "already completed")
  assert(f:result() == 1)
end)

test("s.fire(f) raises at the caller's line", function()
  local s = signal()
  raises(here(), function() s.fire(future(), 1) end, "signal expected")
end)

test("s.fire() raises at the caller's line", function()
  local s = signal()
  raises(here(), function() s.fire() end, "signal expected")
end)

test("s.set(ch) raises at the caller's line", function()
  local s = signal()
  raises(here(), function() s.set(channel()) end, "signal expected")
end)

test("s.reset(42) raises at the caller's line", function()
  local s = signal()
  raises(here(), function() s.reset(42) end, "signal expected")
end)

test("s.connect(t, fn) raises at the caller's line", function()
  local s = signal()
  raises(here(), function() s.connect(current(), print) end, "signal expected")
end)

test("s:connect(42) raises at the caller's line", function()
  local s = signal()
  raises(here(), function() s:connect(42) end, "function expected")
end)

test("c.disconnect(s) raises at the caller's line", function()
  local s = signal()
  local c = s:connect(print)
  raises(here(), function() c.disconnect(s) end, "connection expected")
  assert(c.connected, "disconnected anyway")
end)

test("ch.send(f, 1) raises at the caller's line", function()
  local ch = channel()
  raises(here(), function() ch.send(future(), 1) end, "channel expected")
  assert(#ch == 0)
end)

test("ch.send() raises at the caller's line", function()
  local ch = channel()
  raises(here(), function() ch.send() end, "channel expected")
end)

test("ch:send(nil) raises at the caller's line", function()
  local ch = channel()
  raises(here(), function() ch:send(nil) end, "nil")
end)

test("ch:send() raises at the caller's line", function()
  local ch = channel()
  raises(here(), function() ch:send() end, "value expected")
end)

test("ch.recv(s) raises at the caller's line", function()
  local ch = channel()
  raises(here(), function() ch.recv(signal()) end, "channel expected")
end)

test("ch.try_send(g, 1) raises at the caller's line", function()
  local ch = channel()
  raises(here(), function() ch.try_send(group{}, 1) end, "channel expected")
end)

test("ch.try_recv(t) raises at the caller's line", function()
  local ch = channel()
  raises(here(), function() ch.try_recv(current()) end, "channel expected")
end)

test("ch.close(f) raises at the caller's line", function()
  local ch = channel()
  raises(here(), function() ch.close(future()) end, "channel expected")
  assert(not ch.closed)
end)

test("ch:send on a closed channel raises at the caller's line", function()
  local ch = channel()
  ch:close()
  raises(here(), function() ch:send(1) end, "closed")
end)

test("g.spawn(t, fn) raises at the caller's line", function()
  local g = group{}
  local ran = false
  raises(here(), function() g.spawn(current(), function() ran = true end) end, "group expected")
  assert(not ran, "the function ran anyway")
end)

test("g.spawn(fn) raises at the caller's line", function()
  local g = group{}
  raises(here(), function() g.spawn(function() end) end, "group expected")
end)

test("g:spawn(42) raises at the caller's line", function()
  local g = group{}
  raises(here(), function() g:spawn(42) end, "function expected")
end)

test("g.pause(t) raises at the caller's line", function()
  local g = group{}
  raises(here(), function() g.pause(current()) end, "group expected")
end)

test("g.resume(f) raises at the caller's line", function()
  local g = group{}
  raises(here(), function() g.resume(future()) end, "group expected")
end)

test("g.cancel(s) raises at the caller's line", function()
  local g = group{}
  raises(here(), function() g.cancel(signal()) end, "group expected")
  assert(g.alive)
end)

test("g.tasks(ch) raises at the caller's line", function()
  local g = group{}
  raises(here(), function() g.tasks(channel()) end, "group expected")
end)

test("g.time_scale = NaN raises at the caller's line", function()
  local g = group{}
  raises(here(), function() g.time_scale = NaN end, "time_scale")
  assert(g.time_scale == 1, tostring(g.time_scale))
end)

test("g.time_scale = inf raises at the caller's line", function()
  local g = group{}
  raises(here(), function() g.time_scale = inf end, "time_scale")
end)

test("g.time_scale = -1 raises at the caller's line", function()
  local g = group{}
  raises(here(), function() g.time_scale = -1 end, "time_scale")
end)

test("g.time_scale = 'x' raises at the caller's line", function()
  local g = group{}
  raises(here(), function() g.time_scale = "x" end, "number expected")
end)

test("g.anything = 1 raises at the caller's line", function()
  local g = group{}
  raises(here(), function() g.anything = 1 end, "anything")
end)

test("weft.root.time_scale = NaN raises at the caller's line", function()
  raises(here(), function() weft.root.time_scale = NaN end, "time_scale")
  assert(weft.root.time_scale == 1)
end)

-- ======================================================================
-- dead handles
-- ======================================================================

-- A handle keeps its object: a script cannot hold a freed group, future,
-- signal or channel. What it can hold is one that is over: a cancelled
-- group (its tasks end; the group stays usable, as hot reload relies on
-- when it restarts a module's tasks in the same group), a finished task,
-- a completed future, a closed channel, a disconnected connection.

test("a cancelled group's methods keep working without crashing", function()
  local g = group{name = "over"}
  local old = g:spawn(function() wait(10) end)
  g:cancel()
  assert(old.status == "cancelled", "its task is " .. old.status)
  g:pause()
  assert(g.paused)
  g:resume()
  g.time_scale = 2
  assert(g.time_scale == 2 and g.name == "over")
  local t = g:spawn(function() wait() return "ran" end)
  assert(#g:tasks() == 1 and g:tasks()[1] == t, #g:tasks() .. " task(s)")
  assert(wait(t) == "ran")
  g:cancel()
  g:cancel()
  assert(g.alive)
end)

test("a cancelled group's subgroups have their tasks cancelled and stay usable", function()
  local g = group{}
  local sub = group{parent = g}
  local t = sub:spawn(function() wait(10) end)
  g:cancel()
  assert(t.status == "cancelled", "the subgroup's task is " .. t.status)
  local child = group{parent = g}
  assert(child.parent == g)
  assert(wait(sub:spawn(function() return 1 end)) == 1)
end)

test("a disconnected connection's methods do not crash", function()
  local s = signal()
  local n = 0
  local c = s:connect(function() n = n + 1 end)
  c:disconnect()
  c:disconnect()
  s:fire()
  assert(n == 0 and not c.connected, "n " .. n)
end)

test("a closed channel's methods do not crash", function()
  local ch = channel(1)
  ch:close()
  ch:close()
  assert(ch:try_send(1) == false)
  local v, why = ch:try_recv()
  assert(v == nil and why == "closed", tostring(why))
  v, why = ch:recv()
  assert(v == nil and why == "closed", tostring(why))
end)

test("a completed future's methods do not crash", function()
  local f = future()
  f:fail("over")
  f:cancel()
  assert(f.state == "failed" and f:done())
  local ok, err = pcall(f.result, f)
  assert(not ok and err == "over", tostring(err))
  local seen
  f:on_done(function(x) seen = x.state end)
  assert(seen == "failed", tostring(seen))
end)

test("a finished task's handle stays usable", function()
  local t = spawn(function() return 1, 2 end)
  t:cancel()
  t:cancel()
  assert(t.status == "done", t.status)
  local a, b = wait(t)
  assert(a == 1 and b == 2, tostring(a) .. ", " .. tostring(b))
end)

-- ======================================================================
-- handle metatables
-- ======================================================================

-- getmetatable on a handle must not hand out the table every handle of
-- its kind shares: writing __index, __wait or __gc there would break (or,
-- with a forged __wait, crash) every script. The case only changes
-- __index, which fails safely.
test("handle metatables cannot be changed by a script", function()
  local handles = {task = spawn(function() wait(10) end), future = future(), signal = signal(),
                   channel = channel(), group = group{}, root = weft.root,
                   connection = signal():connect(print)}
  for kind, h in pairs(handles) do
    local mt = getmetatable(h)
    if type(mt) == "table" then pcall(function() mt.__index = nil end) end
    local ok, err = pcall(function() return h.nothing end)
    assert(ok, "changing getmetatable(" .. kind .. ").__index broke every " .. kind
      .. " handle: " .. tostring(err))
  end
end)

-- ======================================================================
-- odd error values
-- ======================================================================

test("an error value of nil is reported without crashing", function()
  local got = capture()
  local t = spawn(function() wait() error(nil) end)
  local ok, err = pcall(wait, t)
  assert(not ok and err == nil, "waiter got " .. tostring(err))
  assert(t.status == "failed", t.status)
  assert(#got == 1, "reported " .. #got .. " times")
  assert(got[1].err == nil and got[1].task == t, "handler got " .. tostring(got[1].err))
  assert(type(got[1].trace) == "string" and got[1].trace:match("stack traceback"), tostring(got[1].trace))
end)

test("an error value that is a table is reported unchanged", function()
  local got = capture()
  local e = {code = 7}
  local t = spawn(function() wait() error(e) end)
  local ok, err = pcall(wait, t)
  assert(not ok and rawequal(err, e), "waiter got " .. tostring(err))
  assert(#got == 1 and rawequal(got[1].err, e), "handler got " .. tostring(got[1] and got[1].err))
  assert(got[1].trace:match("table value"), got[1].trace)
end)

test("an error value whose __tostring errors is reported without crashing", function()
  local got = capture()
  local e = setmetatable({}, {__tostring = function() error("tostring broke") end})
  local t = spawn(function() wait() error(e) end)
  local ok, err = pcall(wait, t)
  assert(not ok and rawequal(err, e), "waiter did not get the value")
  assert(#got == 1 and rawequal(got[1].err, e), "handler did not get the value")
  assert(type(got[1].trace) == "string", "no trace")
  local other = spawn(function() wait() return "alive" end)
  assert(wait(other) == "alive")
end)

test("an error value whose __tostring returns a table is reported without crashing", function()
  local got = capture()
  local e = setmetatable({}, {__tostring = function() return {} end})
  local t = spawn(function() wait() error(e) end)
  pcall(wait, t)
  assert(#got == 1 and rawequal(got[1].err, e), "handler did not get the value")
end)

-- The __tostring below would loop forever; it gives up after a second of
-- CPU time so that a host that does not cut it fails this case instead
-- of hanging the test run.
local function looping_tostring()
  local state = {escaped = false}
  state.value = setmetatable({}, {__tostring = function()
    local t0 = os.clock()
    while os.clock() - t0 < 1 do end
    state.escaped = true
    return "escaped"
  end})
  return state
end

test("an error value whose __tostring loops forever is cut by the budget (task run by the frame)", function()
  local got = capture()
  local bad = looping_tostring()
  local tick = ticker()
  local t = spawn(function() wait() error(bad.value) end)
  wait(0.2)
  assert(not bad.escaped, "the looping __tostring was not cut: the host would hang reporting this error")
  assert(t.status == "failed", t.status)
  assert(#got == 1 and rawequal(got[1].err, bad.value), #got .. " report(s)")
  assert(tick.n >= 12, "frames stopped: ticker ran " .. tick.n .. " times")
end)

test("an error value whose __tostring loops forever is cut without killing the spawner", function()
  local got = capture()
  local bad = looping_tostring()
  local child
  local spawner = spawn(function()
    child = spawn(function() error(bad.value) end) -- fails at once, inside the spawner's spawn
    wait()
    return "survived"
  end)
  wait(0.2)
  assert(not bad.escaped, "the looping __tostring was not cut")
  assert(spawner.status == "done", "the spawner was " .. spawner.status .. " for its child's error value: "
    .. tostring(spawner.error))
  assert(child and child.status == "failed", "child " .. tostring(child and child.status))
  assert(#got >= 1 and rawequal(got[1].err, bad.value), "the failure was not reported")
end)

-- ======================================================================
-- __gc and __close
-- ======================================================================

-- Finalizers run as in Lua, after the object is unreachable, but as
-- tasks under the budget, never inside the collector.
test("a __gc function runs after its object is unreachable, before a full collection returns", function()
  local ran = {}
  local mt = {__gc = function(o) ran[#ran + 1] = o.n end}
  for i = 1, 3 do setmetatable({n = i}, mt) end
  local kept = setmetatable({n = 0}, mt)
  collectgarbage()
  assert(table.concat(ran, ",") == "3,2,1", "order " .. table.concat(ran, ","))
  assert(kept.n == 0)
end)

test("a callable __gc runs; __gc = true is accepted and ignored, nothing reported", function()
  local got = capture()
  local ran = false
  local callable = setmetatable({}, {__call = function(_, o) ran = o.tag end})
  setmetatable({tag = "c"}, {__gc = callable})
  local mt = {__gc = true}
  local x = setmetatable({}, mt)
  assert(getmetatable(x) == mt and mt.__gc == true, "the metatable was changed")
  x = nil
  collectgarbage()
  assert(ran == "c", "the callable __gc did not run")
  wait(0.1)
  assert(#got == 0, "reported " .. #got .. " time(s): " .. tostring(got[1] and got[1].err))
end)

-- The route that hung the host when Lua ran finalizers: a __gc put into
-- the metatable after setmetatable (with __gc = true there) runs, as in
-- Lua, but as a task: a loop is killed at its line, the rest goes on.
test("a looping __gc put in after setmetatable is killed alone at its line", function()
  local got = capture()
  local state = {ran = false}
  local mt = {__gc = true}
  local x = setmetatable({}, mt)
  local line = here() + 1
  mt.__gc = function() state.ran = true; while true do end end
  local mt2 = {}
  local y = setmetatable({}, mt2)
  mt2.__gc = function() state.ran2 = true end -- not marked: never runs, as in Lua
  x, y = nil, nil
  collectgarbage()
  assert(state.ran, "the finalizer did not run")
  local c = ticker()
  local f0 = frame()
  for _ = 1, 2000 do if #got > 0 then break end wait() end
  assert(c.n >= frame() - f0 - 1, "the frames stopped")
  c.task:cancel()
  assert(not state.ran2, "an unmarked object was finalized")
  assert(#got == 1 and tostring(got[1].err):match("hostile_test%.lua:" .. line .. ": script ran too long"),
    "reported " .. #got .. ": " .. tostring(got[1] and got[1].err))
end)

test("a finalizer's error is reported at its line; a resurrected object is not finalized again", function()
  local got = capture()
  local saved, runs = nil, 0
  local line = here() + 1
  setmetatable({}, {__gc = function(o) runs = runs + 1; saved = o; error("gc boom") end})
  collectgarbage()
  saved = nil
  collectgarbage()
  assert(runs == 1, "finalized " .. runs .. " times")
  assert(#got == 1 and tostring(got[1].err):match("hostile_test%.lua:" .. line .. ": gc boom"),
    tostring(got[1] and got[1].err))
end)

test("a finalizer runs at the next frame's start after an incremental cycle", function()
  local ran = false
  setmetatable({}, {__gc = function() ran = true end})
  full_gc()
  wait()
  assert(ran, "not run by the next frame")
end)

test("a chain of finalizers that each make two more runs a share a frame, and the frames go on", function()
  local got = capture()
  local per, total = {}, 0
  local function mk()
    setmetatable({}, {__gc = function()
      per[frame()] = (per[frame()] or 0) + 1
      total = total + 1
      mk() mk()
    end})
  end
  mk()
  local c = ticker()
  local f0 = frame()
  for _ = 1, 40 do
    for _ = 1, 20 do if collectgarbage("step", 1000) then break end end
    wait()
  end
  local frames = frame() - f0
  assert(c.n >= frames - 1, "the frames stopped: " .. c.n .. " of " .. frames)
  local most = 0
  for _, n in pairs(per) do most = math.max(most, n) end
  assert(total > 256 and most <= 256, "finalizers a frame: at most " .. most .. ", " .. total .. " in all")
  assert(#got == 0, "reported " .. #got .. " times")
  c.task:cancel()
end)

test("a __close error on return is reported once at its line", function()
  local got = capture()
  local line
  local t = spawn(function()
    line = here(); local _ <close> = setmetatable({}, {__close = function() error("close boom") end})
    return 1
  end)
  assert(t.status == "failed", t.status)
  assert(#got == 1, "reported " .. #got .. " times")
  assert(tostring(got[1].err):match("hostile_test%.lua:" .. line .. ": close boom"), tostring(got[1].err))
end)

test("a __close error on cancel is reported once and the cancel completes", function()
  local got = capture()
  local tick = ticker()
  local t = spawn(function()
    local _ <close> = setmetatable({}, {__close = function() error("close boom") end})
    wait(10)
  end)
  t:cancel()
  assert(t.status == "cancelled", t.status)
  assert(#got == 1 and tostring(got[1].err):match("close boom"), "reported " .. #got .. " times")
  assert(got[1].task == t, "reported for another task")
  local n = tick.n
  wait(0.1)
  assert(tick.n >= n + 5, "frames stopped")
end)

test("a __close error after a task error: both are reported", function()
  local got = capture()
  local t = spawn(function()
    local _ <close> = setmetatable({}, {__close = function() error("close boom") end})
    wait()
    error("body boom")
  end)
  wait(0.1)
  assert(t.status == "failed", t.status)
  local seen = {}
  for _, r in ipairs(got) do seen[#seen + 1] = tostring(r.err) end
  local all = table.concat(seen, " | ")
  assert(all:match("body boom") and all:match("close boom"), "reports: " .. all)
end)

test("a finally() error is reported and the other cleanups still run", function()
  local got = capture()
  local ran = {}
  local t = spawn(function()
    local _ <close> = finally(function() ran[#ran + 1] = "outer" end)
    local _ <close> = finally(function() error("cleanup boom") end)
    local _ <close> = finally(function() ran[#ran + 1] = "inner" end)
    wait(10)
  end)
  t:cancel()
  assert(table.concat(ran, ",") == "inner,outer", "ran " .. table.concat(ran, ","))
  assert(#got == 1 and tostring(got[1].err):match("cleanup boom"), "reported " .. #got .. " times")
end)

test("a finally() error whose value is nil is reported", function()
  local got = capture()
  local t = spawn(function()
    local _ <close> = finally(function() error(nil) end)
    wait(10)
  end)
  t:cancel()
  assert(t.status == "cancelled", t.status)
  assert(#got == 1, "reported " .. #got .. " times")
end)

-- ======================================================================
-- budgets: runaway loops
-- ======================================================================

test("a runaway loop is killed at its file:line while another task keeps running", function()
  local got = capture()
  local tick = ticker()
  local line
  local t = spawn(function()
    wait()
    line = here(); while true do end
  end)
  local f0 = frame()
  assert(ended(t) == "failed", "runaway task " .. t.status)
  assert(#got == 1, "reported " .. #got .. " times")
  local msg = tostring(got[1].err)
  assert(msg:match("hostile_test%.lua:" .. line .. ":"), "error does not name line " .. line .. ": " .. msg)
  assert(msg:match("too long"), msg)
  local frames = frame() - f0
  assert(frames > 3 and tick.n >= frames - 1, "the other task ran " .. tick.n .. " times in " .. frames .. " frames")
end)

test("a runaway loop in table.sort's comparator is killed at once", function()
  local got = capture()
  local line
  local t = spawn(function()
    table.sort({3, 1, 2, 5, 4}, function(a, b)
      line = line or here(); while true do end
    end)
  end)
  assert(t.status == "failed", "the comparator was not killed at once: " .. t.status)
  local msg = tostring(got[1] and got[1].err)
  assert(msg:match("hostile_test%.lua:" .. tostring(line) .. ":") and msg:match("too long"), msg)
end)

test("pcall(loop) cannot swallow the kill", function()
  local got = capture()
  local after = false
  local t = spawn(function()
    wait()
    for _ = 1, 1000 do pcall(function() while true do end end) end
    after = true
  end)
  assert(ended(t) == "failed", t.status)
  assert(not after, "code after the swallowed kill ran")
  assert(#got == 1 and tostring(got[1].err):match("too long"), tostring(got[1] and got[1].err))
end)

test("xpcall(loop, handler) cannot swallow the kill", function()
  capture()
  local after = false
  local t = spawn(function()
    wait()
    for _ = 1, 1000 do xpcall(function() while true do end end, function(e) return e end) end
    after = true
  end)
  assert(ended(t) == "failed" and not after, t.status .. ", after " .. tostring(after))
end)

test("a runaway loop in a plain coroutine cannot be swallowed by coroutine.resume", function()
  capture()
  local after = false
  local t = spawn(function()
    wait()
    local co = coroutine.create(function() while true do end end)
    for _ = 1, 1000 do coroutine.resume(co) end
    after = true
  end)
  assert(ended(t) == "failed" and not after, t.status .. ", after " .. tostring(after))
end)

-- ======================================================================
-- memory and stacks
-- ======================================================================

test("a memory hog fails with not enough memory; others keep running and can allocate", function()
  local got = capture()
  local tick = ticker()
  local hog = spawn(function()
    local hoard = {}
    local s = string.rep("x", 1 << 24) -- 16 MB; the limit is 256 MB
    for i = 1, 64 do
      hoard[i] = s .. i
      if i % 4 == 0 then wait() end
    end
  end)
  local ok, err = pcall(wait, hog)
  assert(not ok and tostring(err):match("not enough memory"), "hog: " .. tostring(err))
  assert(hog.status == "failed", hog.status)
  assert(#got == 1 and tostring(got[1].err):match("not enough memory"), #got .. " report(s)")
  local n = tick.n
  wait()
  assert(tick.n == n + 1 and tick.task.status == "waiting", "the ticker stopped")
  local after = spawn(function()
    local t = {}
    for i = 1, 100 do t[i] = string.rep("y", 100000) end
    return #t
  end)
  assert(wait(after) == 100, "cannot allocate after the failure")
end)

test("a deep recursion (stack overflow) fails only its task", function()
  local got = capture()
  local tick = ticker()
  local line
  local t = spawn(function()
    -- each level carries 100 extra arguments, so the Lua stack (a million
    -- slots) runs out after a few thousand levels, well within the budget
    local function dive(n, ...)
      line = line or here(); return dive(n + 1, ...) + 1
    end
    local filler = {}
    for i = 1, 100 do filler[i] = i end
    return dive(0, table.unpack(filler))
  end)
  wait(0.1)
  assert(t.status == "failed", t.status)
  local msg = tostring(got[1] and got[1].err)
  assert(msg:match("stack overflow"), msg)
  assert(msg:match("hostile_test%.lua:" .. line .. ":"), "error does not name line " .. line .. ": " .. msg)
  assert(tick.task.status == "waiting" and tick.n >= 6, "the other task stopped")
end)

test("a C stack overflow through __index fails only its task", function()
  local got = capture()
  local t = spawn(function()
    local loop = setmetatable({}, {})
    getmetatable(loop).__index = function(s, k) return s[k] end
    return loop.x
  end)
  assert(t.status == "failed", t.status)
  assert(tostring(got[1] and got[1].err):match("stack overflow"), tostring(got[1] and got[1].err))
  wait()
end)

test("deep nested spawns (each child spawning at once) stop at a clear error, at the script's line", function()
  local got = capture()
  local depth = 0
  local function nest(n)
    depth = math.max(depth, n)
    if n < 10000 then spawn(nest, n + 1) end
    wait(10)
  end
  local root = spawn(nest, 1)
  assert(depth >= 90, "only " .. depth .. " levels")
  assert(#got == 1, #got .. " reports")
  assert(tostring(got[1].err):match("hostile_test%.lua:%d+: tasks started inside each other too deep"),
    tostring(got[1].err))
  root:cancel()
  assert(root.status == "cancelled", root.status)
  wait()
  assert(#weft.tasks() == 1, #weft.tasks() .. " tasks left")
end)

test("on_done callbacks that complete futures inside each other stop at a clear error", function()
  local got = capture()
  local fs = {}
  for i = 1, 300 do fs[i] = future() end
  local line = here()
  for i = 1, 299 do fs[i]:on_done(function() fs[i + 1]:resolve(i) end) end
  fs[1]:resolve(0)
  assert(#got == 1, #got .. " reports")
  local e = tostring(got[1].err)
  assert(e:match("on_done callback set at .*hostile_test%.lua:" .. (line + 1)) and e:match("too deep"), e)
end)

test("a 10,000-deep chain of spawns is cancelled from its root without crashing", function()
  capture()
  local N, depth, closed = 10000, 0, 0
  local function link(n, go)
    local _ <close> = finally(function() closed = closed + 1 end)
    wait(go)
    depth = n
    if n < N then
      local nxt = signal()
      spawn(link, n + 1, nxt) -- waits on nxt: one level deeper, no nesting
      nxt:fire()
    end
    wait(inf)
  end
  local go = signal()
  local root = spawn(link, 1, go)
  go:fire()
  wait()
  wait()
  assert(depth == N, "chain reached " .. depth)
  root:cancel()
  assert(root.status == "cancelled", root.status)
  assert(closed == N, closed .. " cleanups ran")
  assert(#weft.tasks() == 1, #weft.tasks() .. " tasks left")
end, {frames = 600})

-- n suspended coroutines, each holding a <close> value that closes the
-- next one: closing the first closes them in one nested recursion.
local function close_chain(n)
  local MT = {__close = function(o) if o.nxt then coroutine.close(o.nxt) end end}
  local cos = {}
  for i = n, 1, -1 do
    local nxt = cos[i + 1]
    cos[i] = coroutine.create(function()
      local _ <close> = setmetatable({nxt = nxt}, MT)
      coroutine.yield()
    end)
    coroutine.resume(cos[i])
    if i % 5000 == 0 then wait() end -- stay within the instruction budget
  end
  return cos
end

-- Nested coroutine.resume is cut at Lua's C-stack limit (about 200
-- levels); nested coroutine.close must be too, or a deep chain overflows
-- the C stack. A 1,000-deep chain shows which it is before the 100,000-deep
-- one is tried, so a host without the limit fails here instead of crashing.
test("a 100,000-deep coroutine.close chain does not crash", function()
  local probe = close_chain(1000)
  pcall(coroutine.close, probe[1])
  local cut = false
  for i = 1, #probe do
    if coroutine.status(probe[i]) ~= "dead" then cut = true break end
  end
  assert(cut, "coroutine.close nests without a limit (a 1,000-deep chain closed in one C"
    .. " recursion); the 100,000-deep chain would overflow the C stack and crash the host")
  probe = nil
  local chain = close_chain(100000)
  local ok = pcall(coroutine.close, chain[1])
  assert(ok ~= nil)
  chain = nil
  wait()
  assert(current().status == "running")
end, {frames = 600})

test("weft.TIMEOUT and weft.CANCELLED have nothing a script could change for the others", function()
  for _, v in ipairs{weft.TIMEOUT, weft.CANCELLED} do
    assert(not pcall(function() v.x = 1 end), "a field was written")
    assert(not pcall(rawset, v, "x", 1), "rawset wrote a field")
    assert(getmetatable(v) == false, "its metatable is reachable")
  end
  assert(tostring(weft.TIMEOUT) == "timed out" and tostring(weft.CANCELLED) == "cancelled")
  local ok, err = pcall(wait, timeout(future(), 0.01))
  assert(not ok and err == weft.TIMEOUT, tostring(err))
end)

test("string.format refuses a call of too much work at the caller's line, before doing any", function()
  local zeros = string.rep("\0", 30 << 20)
  raises(here(), function() return string.format("%q", zeros) end, "too much work for one call")
  zeros = nil
  local args = {} for i = 1, 200000 do args[i] = i / 3 end
  raises(here(), function() return string.format(string.rep("%.99f", 200000), table.unpack(args)) end,
    "too much work for one call")
  -- ordinary ones as Lua's, a 2 MB %q of text included
  assert(#string.format("%q", string.rep("text ", 400000)) == 2000002)
  assert(string.format("%5.1f|%q|%d", 2.25, "a\n", 3) == "  2.2|\"a\\\n\"|3")
end)
