-- Signals: fire, set/reset, connect/disconnect, introspection.

local function resumes(t)
  for _, info in ipairs(weft.tasks()) do
    if info.task == t then return info.resumes end
  end
  error("task not listed by weft.tasks()", 2)
end

local function info_of(t)
  for _, info in ipairs(weft.tasks()) do
    if info.task == t then return info end
  end
end

-- Runs full garbage collection cycles through the sandbox's "step".
local function full_gc()
  for _ = 1, 4 do
    local n = 0
    repeat n = n + 1 until collectgarbage("step", 1 << 20) or n > 1000
  end
end

-- ---- fire ----

test("fire wakes every task waiting now with the values", function()
  local s = signal()
  local got = {}
  local ts = {}
  for i = 1, 3 do
    ts[i] = spawn(function() got[i] = table.pack(wait(s)) end)
  end
  s:fire("door", nil, 3)
  wait(ts)
  for i = 1, 3 do
    local g = got[i]
    assert(g.n == 3 and g[1] == "door" and g[2] == nil and g[3] == 3,
      "waiter " .. i .. " got " .. g.n .. " values")
  end
end)

test("waiters of a signal wake in the frame it fires, in the order they began waiting", function()
  local s = signal()
  local order, frames = {}, {}
  local begin = {4, 1, 3, 2}
  local ts = {}
  for _, i in ipairs(begin) do
    ts[#ts + 1] = spawn(function()
      wait(s)
      order[#order + 1] = i
      frames[#frames + 1] = frame()
    end)
  end
  wait(0.1)
  local at = frame()
  s:fire()
  wait(ts)
  assert(table.concat(order, ",") == "4,1,3,2", "order " .. table.concat(order, ","))
  for k = 1, 4 do assert(frames[k] == at, "woke in frames " .. table.concat(frames, ",")) end
end)

test("fire with nobody waiting is lost: a later wait waits for the next fire", function()
  local s = signal()
  s:fire("early")
  local got
  local t = spawn(function() got = wait(s) end)
  wait(0.2)
  assert(t.status == "waiting" and got == nil, "the wait took the earlier fire")
  s:fire("late")
  wait(t)
  assert(got == "late", "got " .. tostring(got))
end)

test("a task that waits again after a fire waits for the next fire", function()
  local s = signal()
  local n = 0
  local t = spawn(function()
    while true do
      wait(s)
      n = n + 1
    end
  end)
  s:fire()
  wait(0.1)
  assert(n == 1, "one fire woke the loop " .. n .. " times")
  s:fire()
  s:fire() -- the task has not re-waited between these two: it sees one
  wait(0.1)
  assert(n == 2, "n " .. n)
  t:cancel()
end)

test("fire wakes waiters to run after the firing task, not inside fire", function()
  local s = signal()
  local ran = false
  local t = spawn(function() wait(s) ran = true end)
  s:fire()
  assert(not ran, "the waiter ran inside fire")
  assert(t.status == "waiting", "status " .. t.status)
  wait(t)
  assert(ran)
end)

-- ---- set / reset ----

test("set wakes current waiters and latches: later waits return at once with the values", function()
  local s = signal()
  local got
  local t = spawn(function() got = table.pack(wait(s)) end)
  s:set("lit", 2)
  wait(t)
  assert(got.n == 2 and got[1] == "lit" and got[2] == 2, "waiter got " .. got.n .. " values")
  wait() -- a fresh resume
  local me, fr = current(), frame()
  local r = resumes(me)
  for _ = 1, 3 do
    local a, b = wait(s)
    assert(a == "lit" and b == 2, "latched wait got " .. tostring(a) .. ", " .. tostring(b))
  end
  assert(frame() == fr and resumes(me) == r, "a wait on a set signal yielded")
  assert(s.is_set == true, "is_set " .. tostring(s.is_set))
end)

test("reset ends the latch: waits wait for the next fire again", function()
  local s = signal()
  s:set(1)
  s:reset()
  assert(s.is_set == false, "is_set after reset")
  local got
  local t = spawn(function() got = wait(s) end)
  wait(0.1)
  assert(t.status == "waiting", "a wait after reset returned at once")
  s:fire(2)
  wait(t)
  assert(got == 2, "got " .. tostring(got))
end)

test("set with no values latches too", function()
  local s = signal()
  s:set()
  local fr = frame()
  local n = select("#", wait(s))
  assert(frame() == fr, "waited")
  assert(n == 0, "returned " .. n .. " values")
end)

test("a set signal in a list counts as done at once", function()
  local s = signal()
  s:set("x")
  local fr = frame()
  local a, b = wait{s, s}
  assert(a == "x" and b == "x" and frame() == fr, "got " .. tostring(a) .. " " .. tostring(b))
end)

-- ---- connect / disconnect ----

test("connect runs fn as a new task on every fire, with the values", function()
  local s = signal()
  local calls = {}
  local c = s:connect(function(a, b)
    calls[#calls + 1] = {a = a, b = b, task = current()}
  end)
  s:fire(1, "one")
  s:fire(2, "two")
  wait()
  assert(#calls == 2, "ran " .. #calls .. " times")
  assert(calls[1].a == 1 and calls[1].b == "one" and calls[2].a == 2 and calls[2].b == "two")
  assert(calls[1].task ~= calls[2].task, "both fires ran in the same task")
  assert(calls[1].task ~= current(), "ran in the firing task")
  assert(c.connected == true)
end)

test("a connection's function can wait; fires overlap in separate tasks", function()
  local s = signal()
  local log = {}
  s:connect(function(i)
    log[#log + 1] = "start " .. i
    wait(0.5)
    log[#log + 1] = "end " .. i
  end)
  s:fire(1)
  wait(0.1)
  s:fire(2)
  wait(1)
  assert(table.concat(log, ",") == "start 1,start 2,end 1,end 2", "log " .. table.concat(log, ","))
end)

test("an error in a connection's task fails that task only", function()
  local errs = 0
  weft.on_error(function() errs = errs + 1 end)
  local s = signal()
  local n = 0
  s:connect(function() error("boom") end)
  s:connect(function() n = n + 1 end)
  s:fire()
  s:fire()
  wait()
  assert(errs == 2, "reported " .. errs)
  assert(n == 2, "the other connection ran " .. n .. " times")
end)

test("disconnect stops further runs", function()
  local s = signal()
  local n = 0
  local c = s:connect(function() n = n + 1 end)
  s:fire()
  c:disconnect()
  assert(c.connected == false)
  s:fire()
  s:fire()
  wait()
  assert(n == 1, "ran " .. n .. " times")
  c:disconnect() -- twice is harmless
end)

test("connections run in the order they were connected", function()
  local s = signal()
  local order = {}
  for i = 1, 4 do s:connect(function() order[#order + 1] = i end) end
  s:fire()
  wait()
  assert(table.concat(order, ",") == "1,2,3,4", "order " .. table.concat(order, ","))
end)

test("disconnecting a later connection during a fire stops it for that fire", function()
  local s = signal()
  local log = {}
  local second
  s:connect(function()
    log[#log + 1] = "first"
    second:disconnect()
  end)
  second = s:connect(function() log[#log + 1] = "second" end)
  local third = s:connect(function() log[#log + 1] = "third" end)
  s:fire()
  wait()
  assert(table.concat(log, ",") == "first,third", "log " .. table.concat(log, ","))
  s:fire()
  wait()
  assert(table.concat(log, ",") == "first,third,first,third", "log " .. table.concat(log, ","))
  assert(third.connected)
end)

test("a connection that disconnects itself runs once", function()
  local s = signal()
  local n, others = 0, 0
  local c
  c = s:connect(function()
    n = n + 1
    c:disconnect()
  end)
  s:connect(function() others = others + 1 end)
  s:fire()
  s:fire()
  s:fire()
  wait()
  assert(n == 1, "ran " .. n .. " times")
  assert(others == 3, "the other connection ran " .. others .. " times")
end)

test("a connection made during a fire starts with the next fire", function()
  local s = signal()
  local late = 0
  local made = false
  s:connect(function()
    if not made then
      made = true
      s:connect(function() late = late + 1 end)
    end
  end)
  s:fire()
  wait()
  assert(late == 0, "the new connection ran in the fire that made it")
  s:fire()
  wait()
  assert(late == 1, "late ran " .. late)
end)

test("a connection runs in the group of the task that connected", function()
  local s = signal()
  local g = group{name = "enemy"}
  local seen
  g:spawn(function()
    s:connect(function() seen = current().group end)
  end)
  s:fire()
  wait()
  assert(seen == g, "ran in group " .. tostring(seen and seen.name))
end)

test("cancelling the connecting group cancels handlers still running", function()
  local s = signal()
  local g = group{name = "enemy"}
  local finished = false
  local handler
  g:spawn(function()
    s:connect(function()
      handler = current()
      wait(1)
      finished = true
    end)
  end)
  s:fire()
  wait()
  assert(handler and handler.status == "waiting")
  g:cancel()
  assert(handler.status == "cancelled", "status " .. handler.status)
  wait(1.5)
  assert(not finished)
end)

test("a connection outlives the collection of its group's last handle; only a cancel ends it", function()
  local s = signal()
  local n = 0
  local conn
  do
    local g = group{name = "listeners"}
    g:spawn(function() conn = s:connect(function() n = n + 1 end) end)
  end -- nothing holds the group's handle now
  full_gc()
  s:fire()
  wait()
  assert(n == 1, "the connection ended with its group's handle: ran " .. n)
  assert(conn.connected, "the connection says it ended")
end)

test("a connection ends when the group of the task that connected is cancelled", function()
  local s = signal()
  local n = 0
  local g = group{name = "enemy"}
  g:spawn(function()
    s:connect(function() n = n + 1 end)
  end)
  s:fire()
  wait()
  assert(n == 1, "ran " .. n)
  g:cancel()
  g = nil -- the last reference: the group is gone once collected
  full_gc()
  wait()
  s:fire()
  wait()
  assert(n == 1, "the connection outlived its group: ran " .. n)
end)

test("a connection made outside any group-owned task lives on", function()
  local s = signal()
  local n = 0
  s:connect(function() n = n + 1 end)
  full_gc()
  for _ = 1, 3 do s:fire() wait() end
  assert(n == 3, "ran " .. n)
end)

test("connect rejects a non-function", function()
  local s = signal()
  local ok, err = pcall(function() s:connect("nope") end)
  assert(not ok and err:find("function expected"), tostring(err))
end)

-- ---- introspection ----

test("weft.tasks() shows a named signal wait as 'signal <name>'", function()
  local door_opened = signal("door_opened")
  local t = spawn(function() wait(door_opened) end)
  t.name = "guard"
  local info = info_of(t)
  assert(info, "task not listed")
  assert(info.waiting == "signal door_opened", "waiting " .. tostring(info.waiting))
  assert(info.status == "waiting", "status " .. tostring(info.status))
  assert(door_opened.name == "door_opened")
  door_opened:fire()
  wait(t)
  assert(info_of(t) == nil, "a finished task is still listed")
end)

test("an unnamed signal shows as 'signal'", function()
  local s = signal()
  local t = spawn(function() wait(s) end)
  local info = info_of(t)
  assert(info.waiting == "signal", "waiting " .. tostring(info.waiting))
  t:cancel()
end)

test("a signal handle is the same value everywhere", function()
  local s = signal("x")
  local got
  spawn(function(v) got = v end, s)
  assert(got == s)
  assert(tostring(s) == "signal x", tostring(s))
end)
