-- A task is plain Lua 5.4: what a script sees matches what lua5.4 gives
-- for the same code, except for the documented sandbox. Every expected
-- value here is lua5.4's own output for the same expression.
-- (tests/conformance/ runs whole scripts under both and compares.)

local function fails_with(expected, f, ...)
  local ok, err = pcall(f, ...)
  assert(not ok, "no error raised")
  assert(err == expected, ("got:      %s\nexpected: %s"):format(tostring(err), expected))
end

local HERE = "tests/lua/fidelity_test.lua:"

local here = require("lib.expect").here
local ended = require("lib.expect").ended

local function silence_reports() weft.on_error(function() end) end

-- ---- errors from built-ins read exactly as in plain Lua ----

test("a bad argument to a string method names the method and the script's line", function()
  fails_with(HERE .. here() .. ": bad argument #1 to 'find' (string expected, got table)", function() return ("x"):find({}) end)
  fails_with(HERE .. here() .. ": bad argument #1 to 'match' (string expected, got table)", function() return ("x"):match({}) end)
  fails_with(HERE .. here() .. ": bad argument #1 to 'gmatch' (string expected, got table)", function() return ("x"):gmatch({}) end)
  fails_with(HERE .. here() .. ": bad argument #1 to 'gsub' (string expected, got table)", function() return ("x"):gsub({}, "") end)
  fails_with(HERE .. here() .. ": malformed pattern (ends with '%')", function() return ("x"):find("%") end)
end)

test("a built-in called through pcall is named as in plain Lua", function()
  fails_with("bad argument #2 to 'string.find' (string expected, got table)", string.find, "x", {})
  fails_with("bad argument #1 to 'setmetatable' (table expected, got number)", setmetatable, 1)
  fails_with("bad argument #1 to 'coroutine.resume' (thread expected, got number)",
    coroutine.resume, 1)
  fails_with("bad argument #1 to 'getmetatable' (value expected)", getmetatable)
end)

test("coroutine, load and collectgarbage errors read as in plain Lua", function()
  fails_with(HERE .. here() .. ": bad argument #1 to 'resume' (thread expected, got number)", function() return coroutine.resume(1) end)
  fails_with(HERE .. here() .. ": bad argument #1 to 'wrap' (function expected, got number)", function() return coroutine.wrap(1) end)
  fails_with(HERE .. here() .. ": bad argument #1 to 'close' (thread expected, got number)", function() return coroutine.close(1) end)
  fails_with("bad argument #1 to 'load' (function expected, got boolean)", load, true)
  local f1, e1 = load(1)
  assert(f1 == nil and e1 == [[[string "1"]:1: unexpected symbol near '1']], e1)
  fails_with(HERE .. here() .. ": bad argument #1 to 'collectgarbage' (invalid option 'bogus')", function() return collectgarbage("bogus") end)
  fails_with(HERE .. here() .. ": cannot change a protected metatable", function() setmetatable(setmetatable({}, {__metatable = 1}), {}) end)
  fails_with(HERE .. here() .. ": boom", coroutine.wrap(function() error("boom") end))
  local co = coroutine.create(function() end)
  coroutine.resume(co)
  local ok, msg = coroutine.resume(co)
  assert(not ok and msg == "cannot resume dead coroutine", msg)
  local f, err = load("x=", "=chunk")
  assert(f == nil and err == "chunk:1: unexpected symbol near <eof>", err)
end)

-- ---- setmetatable, __gc ----

test("setmetatable leaves the metatable as the script wrote it", function()
  local f = function() end
  local mt = {__index = f, __gc = true}
  local x = setmetatable({}, mt)
  assert(getmetatable(x) == mt and mt.__gc == true and mt.__index == f, "metatable changed")
  local mt2 = {}
  setmetatable({}, mt2)
  mt2.__gc = f
  assert(mt2.__gc == f, "a __gc written later reads back differently")
end)

-- ---- library tables and the global environment ----

test("library tables are real tables: type, next, rawget, pairs", function()
  assert(type(string) == "table" and type(math) == "table" and type(coroutine) == "table")
  assert(next(math) ~= nil, "next(math) found nothing")
  assert(rawget(math, "pi") == math.pi and rawget(string, "format") == string.format)
  local n = 0
  for _ in pairs(table) do n = n + 1 end
  assert(n >= 7, "pairs(table) listed " .. n)
  assert(rawget(_G, "print") == print and rawget(_ENV, "string") == string, "globals not raw")
end)

test("a script may change its library tables", function()
  string.shout = function(s) return s:upper() .. "!" end
  assert(string.shout("hey") == "HEY!")
  math.pi = 3
  assert(math.pi == 3)
end)

test("the global environment accepts a metatable (a strict-globals module)", function()
  assert(getmetatable(_ENV) == nil, "a fresh environment shows a metatable")
  local declared = {}
  setmetatable(_ENV, {
    __newindex = function(t, k, v) declared[k] = true; rawset(t, k, v) end,
    __index = function(_, k) error("variable '" .. k .. "' is not declared", 2) end,
  })
  fresh_global = 1
  assert(declared.fresh_global and fresh_global == 1)
  fails_with(HERE .. here() .. ": variable 'undeclared_name' is not declared", function() return undeclared_name end)
  assert(print and wait and string.format, "built-ins became unreachable")
  setmetatable(_ENV, nil)
  assert(undeclared_name == nil)
end)

test("load gives a chunk the loading script's globals by default, as plain Lua does", function()
  shared_global = 42
  assert(load("return shared_global")() == 42)
  load("set_by_chunk = 7")()
  assert(set_by_chunk == 7)
  assert(load("return x", "c", "t", {x = 1})() == 1)
end)

-- ---- threads ----

test("a task's thread is its own: coroutine.running differs between tasks and reads dead after", function()
  local seen = setmetatable({}, {__mode = "k"})
  local t1 = spawn(function() local co = coroutine.running(); seen[co] = "first"; return co end)
  local co1 = wait(t1)
  local t2 = spawn(function() return coroutine.running() end)
  local co2 = wait(t2)
  assert(co1 ~= co2, "a second task got the first task's thread")
  assert(seen[co2] == nil, "weak-keyed data followed the thread to another task")
  assert(coroutine.status(co1) == "dead", "a finished task's thread reads " .. coroutine.status(co1))
  local ok, msg = coroutine.resume(co1)
  assert(not ok and msg == "cannot resume dead coroutine", tostring(msg))
end)

test("a running task's thread cannot be resumed or closed by a script", function()
  local me = coroutine.running()
  local t = spawn(function() wait(1) end)
  fails_with(HERE .. here() .. ": bad argument #1 to 'resume' (this is a task's thread: wait for or cancel the task instead)", function() return coroutine.resume(me) end)
  t:cancel()
end)

test("coroutines nest as deep inside a task as in plain Lua", function()
  local function nest(n)
    local co = coroutine.create(function() return nest(n + 1) end)
    local ok, r = coroutine.resume(co)
    if ok then return r end
    return n
  end
  local depth = nest(0)
  wait(0)
  local after = nest(0)
  assert(depth == after, depth .. " levels, then " .. after .. " after a wait")
  assert(depth >= 190, "only " .. depth .. " levels")
end)

-- ---- budgets reach into coroutines ----

test("a runaway loop inside a script's coroutine is killed, and resume cannot swallow it", function()
  silence_reports()
  local t = spawn(function()
    while true do
      local co = coroutine.create(function() while true do end end)
      local ok = coroutine.resume(co) -- a kill here must not come back as `false, err`
    end
  end)
  assert(ended(t) == "failed", "still " .. t.status)
  assert(tostring(t.error):match(HERE .. "%d+: script ran too long without waiting"), tostring(t.error))
end)

test("xpcall(f, debug.traceback) traces from where the error was raised, as Lua's", function()
  local ok, tb = xpcall(function() error("boom") end, debug.traceback)
  assert(not ok and tb:find("boom\nstack traceback:\n\t%[C%]: in function 'error'\n\t" .. HERE), tb)
  local ok2, e = xpcall(function() error({}) end, debug.traceback)
  assert(not ok2 and type(e) == "table", "an error that is no string comes back as it is")
end)

test("an xpcall handler that loops forever is stopped with its task, not the host", function()
  -- the kill is raised from the budget's hook, and Lua runs the message
  -- handler before it leaves the hook, with hooks off: weft does not run
  -- the script's handler for a kill, so it cannot loop unseen
  silence_reports()
  local handled = 0
  local t = spawn(function()
    xpcall(error, function() handled = handled + 1 while true do end end, "boom")
  end)
  local frames = 0
  while t.status ~= "failed" and frames < 20 do wait(); frames = frames + 1 end
  assert(t.status == "failed", "still " .. t.status .. " after " .. frames .. " frames")
  assert(tostring(t.error):match(HERE .. "%d+: script ran too long without waiting"), tostring(t.error))
  assert(handled == 1, "the handler ran for the script's own error, once: " .. handled)
end)

test("a kill two coroutines deep is not swallowed by pcall in between", function()
  silence_reports()
  local survived = false
  local t = spawn(function()
    local outer = coroutine.wrap(function()
      while true do
        pcall(coroutine.wrap(function() while true do end end))
        survived = true
      end
    end)
    outer()
  end)
  assert(ended(t) == "failed" and tostring(t.error):match("too long"), t.status)
  assert(not survived, "code ran after the kill")
end)

test("many short coroutines in a loop are counted toward the budget", function()
  silence_reports()
  local t = spawn(function()
    while true do coroutine.wrap(function() for _ = 1, 900 do end end)() end
  end)
  assert(ended(t) == "failed" and tostring(t.error):match("too long"), t.status)
end)

test("work spread over coroutine resumes is preempted, not killed, when it waits in time", function()
  local t = spawn(function()
    local gen = coroutine.wrap(function() for i = 1, math.huge do coroutine.yield(i) end end)
    local n = 0
    for _ = 1, 3 do
      for _ = 1, 200000 do n = n + gen() end -- several budgets of work
      wait()
    end
    return n > 0
  end)
  assert(wait(t) == true)
end)

test("a long stretch inside a coroutine is preempted there and goes on next frame", function()
  local gen = coroutine.wrap(function()
    local n = 0
    while true do
      for _ = 1, 6e5 do n = n + 1 end -- about two budgets between yields
      coroutine.yield(n)
    end
  end)
  for k = 1, 3 do
    local f0 = frame()
    assert(gen() == k * 6e5, "the generator lost its place")
    assert(frame() > f0, "a stretch of two budgets ran within one frame")
    wait()
  end
  local co = coroutine.create(function() local x = 0 for i = 1, 6e5 do x = x + i end return x end)
  local ok, sum = coroutine.resume(co)
  assert(ok and sum == 180000300000, tostring(sum))
end)
