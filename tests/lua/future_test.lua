-- Futures: resolve, fail, cancel, waiters, state, result, on_done.

-- How many times t has been resumed so far (from weft.tasks()).
local function resumes(t)
  for _, info in ipairs(weft.tasks()) do
    if info.task == t then return info.resumes end
  end
  error("task not listed by weft.tasks()", 2)
end

local function expect_error(fn, pattern)
  local ok, err = pcall(fn)
  assert(not ok, "no error raised")
  assert(type(err) == "string" and err:find(pattern),
    "error " .. tostring(err) .. " does not match " .. pattern)
  return err
end

-- ---- completing ----

test("resolve wakes a waiter with the values", function()
  local f = future()
  local got
  local t = spawn(function() got = table.pack(wait(f)) end)
  assert(t.status == "waiting", "status " .. t.status)
  f:resolve("open", 3)
  wait(t)
  assert(got.n == 2 and got[1] == "open" and got[2] == 3,
    "got " .. tostring(got.n) .. " values: " .. tostring(got[1]) .. ", " .. tostring(got[2]))
end)

test("a waiter resumes in the frame the future resolves", function()
  local f = future()
  local woke
  spawn(function() wait(f) woke = frame() end)
  wait(0.5)
  local at = frame()
  f:resolve()
  assert(woke == nil, "the waiter ran inside resolve")
  wait_until(function() return woke end)
  assert(woke == at, "resolved in frame " .. at .. ", waiter woke in frame " .. tostring(woke))
end)

test("resolve with multiple values keeps every value, nils included", function()
  local f = future()
  local got
  spawn(function() got = table.pack(wait(f)) end)
  f:resolve(1, nil, "three", nil)
  wait()
  assert(got.n == 4, "got " .. got.n .. " values")
  assert(got[1] == 1 and got[2] == nil and got[3] == "three" and got[4] == nil, "wrong values")
  local r = table.pack(f:result())
  assert(r.n == 4 and r[1] == 1 and r[3] == "three", "result gave " .. r.n .. " values")
end)

test("resolve with no values: wait returns nothing", function()
  local f = future()
  f:resolve()
  local n = select("#", wait(f))
  assert(n == 0, "wait returned " .. n .. " values")
  assert(f.state == "resolved", "state " .. f.state)
end)

test("fail raises the error in the waiter", function()
  local f = future()
  local ok, err
  local t = spawn(function() ok, err = pcall(wait, f) end)
  f:fail("jammed")
  wait(t)
  assert(ok == false, "wait did not raise")
  assert(err == "jammed", "error " .. tostring(err))
end)

test("a failed future raises its error table unchanged in every waiter", function()
  local f = future()
  local e = {code = 42}
  local errs = {}
  local ts = {}
  for i = 1, 3 do
    ts[i] = spawn(function()
      local ok, err = pcall(wait, f)
      errs[i] = {ok = ok, err = err}
    end)
  end
  f:fail(e)
  wait(ts)
  for i = 1, 3 do
    assert(errs[i].ok == false, "waiter " .. i .. " did not raise")
    assert(rawequal(errs[i].err, e), "waiter " .. i .. " got " .. tostring(errs[i].err))
  end
  -- a wait that starts after the failure raises the same value at once
  local ok, err = pcall(wait, f)
  assert(not ok and rawequal(err, e), "late waiter got " .. tostring(err))
end)

test("an uncaught failure fails the waiting task with the same value", function()
  weft.on_error(function() end)
  local f = future()
  local e = {}
  local t = spawn(function() wait(f) end)
  f:fail(e)
  local ok, err = pcall(wait, t)
  assert(not ok and rawequal(err, e), "got " .. tostring(err))
  assert(t.status == "failed", "status " .. t.status)
end)

test("cancel wakes waiters with a cancellation error", function()
  local f = future()
  local ok, err
  local t = spawn(function() ok, err = pcall(wait, f) end)
  f:cancel()
  wait(t)
  assert(ok == false, "wait did not raise")
  assert(weft.is_cancelled(err), "error is not a cancellation: " .. tostring(err))
  assert(f.state == "cancelled", "state " .. f.state)
end)

test("a task that waits on a cancelled future without catching ends cancelled", function()
  local reports = 0
  weft.on_error(function() reports = reports + 1 end)
  local f = future()
  local t = spawn(function() wait(f) end)
  f:cancel()
  wait()
  assert(t.status == "cancelled", "status " .. t.status)
  assert(reports == 0, "reported " .. reports .. " error(s)")
end)

test("resolving a resolved future raises", function()
  local f = future()
  f:resolve(1)
  expect_error(function() f:resolve(2) end, "already")
  assert(f:result() == 1, "the second resolve changed the value")
  assert(f.state == "resolved", "state " .. f.state)
end)

test("failing a resolved future raises", function()
  local f = future()
  f:resolve(1)
  expect_error(function() f:fail("late") end, "already")
  assert(f.state == "resolved", "state " .. f.state)
  assert(f:result() == 1, "result changed")
end)

test("resolving a failed future raises", function()
  local f = future()
  f:fail("x")
  expect_error(function() f:resolve(1) end, "already")
  assert(f.state == "failed", "state " .. f.state)
end)

test("completing twice raises at the caller's line", function()
  local f = future()
  f:resolve()
  -- both calls on one line: the error must name that line
  local ok, err = pcall(function() f:resolve() end) local _, mark = pcall(function() error("mark") end)
  local where = mark:match("^(.-:%d+:)")
  assert(not ok and err:sub(1, #where) == where, "error " .. tostring(err) .. ", want it at " .. where)
end)

test("cancelling a done future does nothing", function()
  local f = future()
  f:resolve("v")
  f:cancel()
  assert(f.state == "resolved", "state " .. f.state)
  assert(f:result() == "v", "result changed")
  local g = future()
  g:fail("e")
  g:cancel()
  assert(g.state == "failed", "state " .. g.state)
  local h = future()
  h:cancel()
  h:cancel()
  assert(h.state == "cancelled", "state " .. h.state)
end)

test("resolving a cancelled future raises", function()
  local f = future()
  f:cancel()
  expect_error(function() f:resolve(1) end, "already")
  assert(f.state == "cancelled")
end)

-- ---- waiting on a done future ----

test("waiting on a resolved future returns at once without yielding", function()
  local f = future()
  f:resolve("a", "b")
  wait() -- leave the first resume
  local me = current()
  local fr, r = frame(), resumes(me)
  local a, b = wait(f)
  assert(a == "a" and b == "b", "got " .. tostring(a) .. ", " .. tostring(b))
  assert(frame() == fr, "frame moved from " .. fr .. " to " .. frame())
  assert(resumes(me) == r, "the task yielded: resumes " .. r .. " -> " .. resumes(me))
end)

test("waiting on a failed future raises at once without yielding", function()
  local f = future()
  f:fail("broken")
  wait()
  local me = current()
  local fr, r = frame(), resumes(me)
  local ok, err = pcall(wait, f)
  assert(not ok and err == "broken", "got " .. tostring(err))
  assert(frame() == fr and resumes(me) == r, "the task yielded")
end)

-- ---- many waiters ----

test("10 waiters on one future wake in the same frame in the order they began waiting", function()
  local f = future()
  local order, frames = {}, {}
  local ts = {}
  -- start waiting in a scrambled spawn order: begin order is what counts
  local begin = {3, 7, 1, 10, 5, 2, 9, 4, 8, 6}
  for _, i in ipairs(begin) do
    ts[#ts + 1] = spawn(function()
      wait(f)
      order[#order + 1] = i
      frames[#frames + 1] = frame()
    end)
  end
  wait(0.25)
  f:resolve()
  wait(ts)
  assert(#order == 10, "woke " .. #order)
  for k = 1, 10 do
    assert(order[k] == begin[k], "wake order " .. table.concat(order, ","))
    assert(frames[k] == frames[1], "woke in frames " .. table.concat(frames, ","))
  end
end)

test("a waiter that started waiting later, in another frame, wakes after the earlier ones", function()
  local f = future()
  local order = {}
  local a = defer(function() wait(f) order[#order + 1] = "late" end)
  local b = spawn(function() wait(f) order[#order + 1] = "early" end)
  wait(2 / 60)
  f:resolve()
  wait{a, b}
  assert(table.concat(order, ",") == "early,late", "order " .. table.concat(order, ","))
end)

-- ---- state, done, result ----

test("state, done and result follow the future", function()
  local f = future()
  assert(f.state == "pending", "state " .. tostring(f.state))
  assert(f:done() == false, "done while pending")
  expect_error(function() return f:result() end, "pending")
  f:resolve(7, 8)
  assert(f.state == "resolved" and f:done() == true, "state " .. f.state)
  local a, b = f:result()
  assert(a == 7 and b == 8, "result " .. tostring(a) .. ", " .. tostring(b))
end)

test("result raises the failure value unchanged", function()
  local f = future()
  local e = setmetatable({}, {__tostring = function() return "custom" end})
  f:fail(e)
  assert(f.state == "failed" and f:done(), "state " .. f.state)
  local ok, err = pcall(f.result, f)
  assert(not ok and rawequal(err, e), "result raised " .. tostring(err))
end)

test("result of a cancelled future raises a cancellation", function()
  local f = future()
  f:cancel()
  assert(f:done(), "a cancelled future is not done")
  local ok, err = pcall(f.result, f)
  assert(not ok and weft.is_cancelled(err), "result raised " .. tostring(err))
end)

test("a future handle compares equal to itself through a task", function()
  local f = future()
  local seen
  spawn(function(x) seen = x end, f)
  assert(seen == f and rawequal(seen, f), "handle changed identity")
end)

-- ---- on_done ----

test("on_done on a done future is called at once with the future", function()
  local f = future()
  f:resolve(1)
  local got
  f:on_done(function(x) got = x end)
  assert(got ~= nil, "on_done did not run at once")
  assert(got == f, "on_done got " .. tostring(got))
end)

test("on_done is called when the future completes, with the future", function()
  local f = future()
  local calls, got, state = 0, nil, nil
  f:on_done(function(x) calls = calls + 1 got = x state = x.state end)
  wait()
  assert(calls == 0, "on_done ran before completion")
  f:fail("nope")
  assert(calls == 1, "on_done ran " .. calls .. " times")
  assert(got == f and state == "failed", "got " .. tostring(got) .. " in state " .. tostring(state))
  wait(0.1)
  assert(calls == 1, "on_done ran again")
end)

test("on_done callbacks run in the order they were added, also on cancel", function()
  local f = future()
  local order = {}
  for i = 1, 3 do f:on_done(function() order[#order + 1] = i end) end
  f:cancel()
  assert(table.concat(order, ",") == "1,2,3", "order " .. table.concat(order, ","))
end)

test("on_done's function runs as a task and may wait", function()
  local f = future()
  local log = {}
  f:on_done(function(x)
    log[#log + 1] = "start"
    wait(0.1)
    log[#log + 1] = "after wait " .. x.state
  end)
  f:resolve()
  assert(#log == 1, "log " .. table.concat(log, ","))
  wait(0.2)
  assert(log[2] == "after wait resolved", "log " .. table.concat(log, ","))
end)

test("on_done rejects a non-function", function()
  local f = future()
  expect_error(function() f:on_done(42) end, "function expected")
end)

-- ---- resolved from another task ----

test("a task resolves a future another task waits on", function()
  local f = future()
  spawn(function() wait(1) f:resolve("open", 3) end)
  local what, n = wait(f)
  assert(what == "open" and n == 3)
  assert(frame() == 60, "woke in frame " .. frame())
end)
