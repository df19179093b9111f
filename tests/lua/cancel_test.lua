-- Cancellation: synchronous unwinding, cleanups, children, waiters.

local function join(t) return table.concat(t, ",") end

test("cancel is synchronous: the task is cancelled when cancel returns", function()
  local t = spawn(function() wait(10) end)
  assert(t.status == "waiting", "status " .. t.status)
  t:cancel()
  assert(t.status == "cancelled", "status right after cancel " .. t.status)
end)

test("cancel runs the task's <close> variables before it returns", function()
  local closed = false
  local t = spawn(function()
    local _ <close> = setmetatable({}, {__close = function() closed = true end})
    wait(10)
  end)
  assert(not closed, "closed before cancel")
  t:cancel()
  assert(closed, "<close> variable did not run by the time cancel returned")
end)

test("cancel runs finally() cleanups before it returns", function()
  local log = {}
  local t = spawn(function()
    local _ <close> = finally(function() log[#log + 1] = "outer" end)
    do
      local _ <close> = finally(function() log[#log + 1] = "inner" end)
      wait(10)
    end
  end)
  t:cancel()
  assert(join(log) == "inner,outer", "cleanups " .. join(log))
end)

test("finally() runs on a normal return too", function()
  local ran = false
  local t = spawn(function()
    local _ <close> = finally(function() ran = true end)
    wait()
  end)
  wait(t)
  assert(ran, "finally did not run")
  assert(t.status == "done", "status " .. t.status)
end)

test("finally() cleanups run only once", function()
  local n = 0
  local t = spawn(function()
    local f = finally(function() n = n + 1 end)
    local _a <close> = f
    local _b <close> = f -- the same cleanup closed twice
    wait(10)
  end)
  t:cancel()
  assert(n == 1, "cleanup ran " .. n .. " times")
end)

test("a cancelled task's code after its wait never runs", function()
  local after = false
  local t = spawn(function()
    wait(0.5)
    after = true
  end)
  wait(0.25)
  t:cancel()
  wait(1)
  assert(not after, "code after the wait ran")
end)

test("pcall around a wait does not catch a cancel", function()
  local after = false
  local t = spawn(function()
    pcall(wait, 10)
    after = true
  end)
  t:cancel()
  wait()
  assert(not after, "pcall swallowed the cancel")
  assert(t.status == "cancelled", "status " .. t.status)
end)

test("cancel reaches children before their parent", function()
  local log = {}
  local p = spawn(function()
    local _ <close> = finally(function() log[#log + 1] = "parent" end)
    spawn(function()
      local _ <close> = finally(function() log[#log + 1] = "child" end)
      wait(10)
    end)
    wait(10)
  end)
  p:cancel()
  assert(join(log) == "child,parent", "order " .. join(log))
end)

test("children are cancelled in spawn order", function()
  local log = {}
  local kids = {}
  local p = spawn(function()
    for i = 1, 4 do
      kids[i] = spawn(function()
        local _ <close> = finally(function() log[#log + 1] = "c" .. i end)
        wait(10)
      end)
    end
    wait(10)
  end)
  p:cancel()
  assert(join(log) == "c1,c2,c3,c4", "order " .. join(log))
  for i = 1, 4 do assert(kids[i].status == "cancelled", "child " .. i .. " " .. kids[i].status) end
end)

test("grandchildren unwind before their parent, subtrees in spawn order", function()
  local log = {}
  local function sleeper(name, body)
    return spawn(function()
      local _ <close> = finally(function() log[#log + 1] = name end)
      if body then body() end
      wait(10)
    end)
  end
  local p = sleeper("p", function()
    sleeper("c1", function() sleeper("g1") end)
    sleeper("c2")
  end)
  p:cancel()
  assert(join(log) == "g1,c1,c2,p", "order " .. join(log))
end)

test("a parent's normal return leaves its children alive in the group", function()
  local child
  local p = spawn(function()
    child = spawn(function() wait(1); return "child done" end)
    wait(0.1)
    return "parent done"
  end)
  wait(p)
  assert(p.status == "done", "parent " .. p.status)
  assert(child.status == "waiting", "child " .. child.status)
  assert(child.group == p.group or p.group == nil, "child changed group")
  local found = false
  for _, t in ipairs(weft.root:tasks()) do found = found or t == child end
  assert(found, "child is not listed in its group")
  assert(wait(child) == "child done", "child did not finish")
end)

test("cancelling a returned parent leaves its children alone", function()
  local child
  local p = spawn(function()
    child = spawn(function() wait(1) end)
  end)
  assert(p.status == "done", "parent " .. p.status)
  p:cancel()
  assert(child.status == "waiting", "child " .. child.status)
  child:cancel()
end)

test("a failing parent cancels its children", function()
  weft.on_error(function() end)
  local log = {}
  local child
  local p = spawn(function()
    local _ <close> = finally(function() log[#log + 1] = "parent" end)
    child = spawn(function()
      local _ <close> = finally(function() log[#log + 1] = "child" end)
      wait(10)
    end)
    wait(0.1)
    error("parent fails")
  end)
  pcall(wait, p)
  assert(p.status == "failed", "parent " .. p.status)
  assert(child.status == "cancelled", "child " .. child.status)
  assert(join(log) == "child,parent", "order " .. join(log))
end)

test("a parent failing before its first wait cancels its children", function()
  weft.on_error(function() end)
  local child
  local p = spawn(function()
    child = spawn(function() wait(10) end)
    error("at once")
  end)
  assert(p.status == "failed", "parent " .. p.status)
  assert(child.status == "cancelled", "child " .. child.status)
end)

test("waiters of a cancelled task get an error weft.is_cancelled recognises", function()
  local t = spawn(function() wait(10) end)
  local result
  local w = spawn(function()
    local ok, err = pcall(wait, t)
    result = {ok = ok, err = err}
  end)
  wait()
  t:cancel()
  wait(w)
  assert(result and result.ok == false, "waiter did not get an error")
  assert(weft.is_cancelled(result.err), "not a cancellation: " .. tostring(result.err))
end)

test("a waiter that does not catch the cancel fails with it", function()
  local reported = {}
  weft.on_error(function(e) reported[#reported + 1] = e end)
  local t = spawn(function() wait(10) end)
  local w = spawn(function() wait(t) end)
  t:cancel()
  wait()
  assert(w.status == "failed" or w.status == "cancelled", "waiter " .. w.status)
  local ok, err = pcall(wait, w)
  assert(not ok and weft.is_cancelled(err), "waiter's error " .. tostring(err))
end)

test("waiting on an already cancelled task raises a cancellation at once", function()
  local t = spawn(function() wait(10) end)
  t:cancel()
  local f = frame()
  local ok, err = pcall(wait, t)
  assert(not ok, "wait succeeded")
  assert(weft.is_cancelled(err), "not a cancellation: " .. tostring(err))
  assert(frame() == f, "raised after yielding")
end)

test("weft.is_cancelled is false for other errors", function()
  assert(weft.is_cancelled("task cancelled") == false, "a string counts as a cancel")
  assert(weft.is_cancelled({}) == false, "a table counts as a cancel")
  assert(weft.is_cancelled(nil) == false, "nil counts as a cancel")
  weft.on_error(function() end)
  local t = spawn(function() error("boom") end)
  local _, err = pcall(wait, t)
  assert(weft.is_cancelled(err) == false, "a failure counts as a cancel")
end)

test("all waiters of a cancelled task are woken in the order they began waiting", function()
  local t = spawn(function() wait(10) end)
  local order = {}
  local ws = {}
  for i = 1, 3 do
    ws[i] = spawn(function()
      local ok, err = pcall(wait, t)
      assert(not ok and weft.is_cancelled(err))
      order[#order + 1] = i
    end)
  end
  t:cancel()
  wait(ws)
  assert(join(order) == "1,2,3", "order " .. join(order))
end)

test("cancelling a finished task does nothing", function()
  local t = spawn(function() return "v" end)
  t:cancel()
  assert(t.status == "done", "status " .. t.status)
  assert(wait(t) == "v", "value lost")
  weft.on_error(function() end)
  local e = {}
  local f = spawn(function() error(e) end)
  f:cancel()
  assert(f.status == "failed", "status " .. f.status)
  local ok, err = pcall(wait, f)
  assert(not ok and rawequal(err, e), "error changed to " .. tostring(err))
end)

test("cancelling a cancelled task again does nothing", function()
  local n = 0
  local t = spawn(function()
    local _ <close> = finally(function() n = n + 1 end)
    wait(10)
  end)
  t:cancel()
  t:cancel()
  assert(n == 1, "cleanup ran " .. n .. " times")
  assert(t.status == "cancelled", "status " .. t.status)
end)

test("a task that cancels itself unwinds at once", function()
  local log = {}
  local t = spawn(function()
    local _ <close> = finally(function() log[#log + 1] = "cleanup" end)
    wait()
    current():cancel()
    log[#log + 1] = "after cancel"
  end)
  wait(2 / 60)
  assert(join(log) == "cleanup", "ran " .. join(log))
  assert(t.status == "cancelled", "status " .. t.status)
end)

test("a task that cancels itself before its first wait unwinds at once", function()
  local log = {}
  local t = spawn(function()
    local _ <close> = finally(function() log[#log + 1] = "cleanup" end)
    current():cancel()
    log[#log + 1] = "after cancel"
  end)
  assert(join(log) == "cleanup", "ran " .. join(log))
  assert(t.status == "cancelled", "status " .. t.status)
end)

test("a self-cancel inside pcall still unwinds the task", function()
  local log = {}
  local t = spawn(function()
    wait()
    pcall(function() current():cancel() end)
    log[#log + 1] = "after pcall"
  end)
  wait(2 / 60)
  assert(#log == 0, "ran " .. join(log))
  assert(t.status == "cancelled", "status " .. t.status)
end)

test("a self-cancelled task's waiters get a cancellation", function()
  local t = spawn(function()
    wait(0.1)
    current():cancel()
  end)
  local ok, err = pcall(wait, t)
  assert(not ok and weft.is_cancelled(err), "err " .. tostring(err))
end)

test("a child that cancels its parent during spawn unwinds both at once", function()
  local log = {}
  local child
  local p = spawn(function()
    local parent = current()
    local _ <close> = finally(function() log[#log + 1] = "parent cleanup" end)
    spawn(function()
      child = current()
      local _ <close> = finally(function() log[#log + 1] = "child cleanup" end)
      parent:cancel()
      log[#log + 1] = "child after cancel"
    end)
    log[#log + 1] = "parent after spawn"
    wait(10)
  end)
  assert(p.status == "cancelled", "parent " .. p.status)
  assert(child.status == "cancelled", "child " .. child.status)
  assert(join(log) == "child cleanup,parent cleanup", "ran " .. join(log))
end)

test("a child that cancels its waiting parent later unwinds both at once", function()
  local log = {}
  local child
  local p = spawn(function()
    local parent = current()
    local _ <close> = finally(function() log[#log + 1] = "parent cleanup" end)
    child = spawn(function()
      local _ <close> = finally(function() log[#log + 1] = "child cleanup" end)
      wait(0.1)
      parent:cancel()
      log[#log + 1] = "child after cancel"
    end)
    wait(10)
  end)
  wait(0.5)
  assert(p.status == "cancelled", "parent " .. p.status)
  assert(child.status == "cancelled", "child " .. child.status)
  assert(join(log) == "child cleanup,parent cleanup", "ran " .. join(log))
end)

test("a grandchild that cancels its grandparent unwinds the whole tree", function()
  local log = {}
  local p = spawn(function()
    local gp = current()
    local _ <close> = finally(function() log[#log + 1] = "p" end)
    spawn(function()
      local _ <close> = finally(function() log[#log + 1] = "c" end)
      spawn(function()
        local _ <close> = finally(function() log[#log + 1] = "g" end)
        wait(0.1)
        gp:cancel()
        log[#log + 1] = "g after cancel"
      end)
      wait(10)
    end)
    wait(10)
  end)
  wait(0.5)
  assert(p.status == "cancelled", "grandparent " .. p.status)
  assert(join(log) == "g,c,p", "ran " .. join(log))
end)

test("a cancelled task leaves what it waited on alone", function()
  local target = spawn(function() wait(0.2); return "ok" end)
  local w1 = spawn(function() return wait(target) end)
  local w2 = spawn(function() return wait(target) end)
  w1:cancel()
  assert(wait(w2) == "ok", "other waiter lost the value")
  assert(target.status == "done", "target " .. target.status)
end)

test("a cancelled task waiting on a list leaves every element", function()
  local a = spawn(function() wait(0.1) end)
  local b = spawn(function() wait(0.2) end)
  local w = spawn(function() wait{a, b, 0.3} end)
  wait(0.05)
  w:cancel()
  wait{a, b}
  wait(0.5)
  assert(w.status == "cancelled", "status " .. w.status)
end)

test("a deferred task cancelled before it starts never runs", function()
  local ran = false
  local t = defer(function() ran = true end)
  t:cancel()
  wait(0.1)
  assert(not ran, "deferred function ran")
  assert(t.status == "cancelled", "status " .. t.status)
end)

test("an error in a cleanup is reported to weft.on_error", function()
  local reported = {}
  weft.on_error(function(err, task, trace)
    reported[#reported + 1] = {err = err, task = task, trace = trace}
  end)
  local t = spawn(function()
    local _ <close> = finally(function() error("cleanup broke") end)
    wait(10)
  end)
  t:cancel()
  assert(#reported == 1, "reported " .. #reported .. " times")
  assert(tostring(reported[1].err):match("cancel_test%.lua:%d+: cleanup broke"),
    "err " .. tostring(reported[1].err))
  assert(reported[1].task == t, "reported for another task")
  assert(t.status == "cancelled", "status " .. t.status)
end)

test("after a failing cleanup the remaining cleanups still run", function()
  local log = {}
  local n = 0
  weft.on_error(function() n = n + 1 end)
  local t = spawn(function()
    local _ <close> = finally(function() log[#log + 1] = "first declared" end)
    local _ <close> = finally(function() error("middle broke") end)
    local _ <close> = finally(function() log[#log + 1] = "last declared" end)
    wait(10)
  end)
  t:cancel()
  assert(join(log) == "last declared,first declared", "ran " .. join(log))
  assert(n == 1, "reported " .. n .. " times")
end)

test("each failing cleanup is reported once", function()
  local errs = {}
  weft.on_error(function(e) errs[#errs + 1] = tostring(e) end)
  local t = spawn(function()
    local _ <close> = finally(function() error("one") end)
    local _ <close> = finally(function() error("two") end)
    wait(10)
  end)
  t:cancel()
  assert(#errs == 2, "reported " .. #errs .. ": " .. join(errs))
  assert(errs[1]:match("two") and errs[2]:match("one"), "reported " .. join(errs))
end)

-- Lua 5.4 chains errors between raw __close handlers of one unwinding, so
-- the host sees the last one; finally() runs each cleanup protected and
-- reports every error (see the case above).
test("raw <close> handlers all run when several fail and the last error is reported", function()
  local errs, log = {}, {}
  weft.on_error(function(e) errs[#errs + 1] = tostring(e) end)
  local function closer(name, fail)
    return setmetatable({}, {__close = function()
      log[#log + 1] = name
      if fail then error(name .. " broke") end
    end})
  end
  local t = spawn(function()
    local _ <close> = closer("a", true)
    local _ <close> = closer("b", false)
    local _ <close> = closer("c", true)
    wait(10)
  end)
  t:cancel()
  assert(join(log) == "c,b,a", "ran " .. join(log))
  assert(t.status == "cancelled", "status " .. t.status)
  assert(#errs == 1 and errs[1]:match("a broke"), "reported " .. #errs .. ": " .. join(errs, " | "))
end)

test("a failing cleanup on a normal return is reported and the task is done", function()
  local n = 0
  weft.on_error(function() n = n + 1 end)
  local t = spawn(function()
    local _ <close> = finally(function() error("late") end)
    wait()
    return "v"
  end)
  assert(wait(t) == "v", "value lost")
  assert(n == 1, "reported " .. n .. " times")
  assert(t.status == "done", "status " .. t.status)
end)

test("a cleanup that tries to wait during cancel does not crash the host", function()
  weft.on_error(function() end)
  local log = {}
  local t = spawn(function()
    local _ <close> = finally(function() log[#log + 1] = "other" end)
    local _ <close> = finally(function() wait(1) end)
    wait(10)
  end)
  t:cancel()
  assert(t.status == "cancelled", "status " .. t.status)
  assert(join(log) == "other", "ran " .. join(log))
end)

test("a cleanup may spawn a new task", function()
  local ran = false
  local t = spawn(function()
    local _ <close> = finally(function()
      spawn(function() wait(0.1); ran = true end)
    end)
    wait(10)
  end)
  t:cancel()
  wait(0.5)
  assert(ran, "task spawned by a cleanup did not run")
end)

test("finally rejects a non-function", function()
  local ok, err = pcall(finally, 42)
  assert(not ok, "finally(42) accepted")
  assert(tostring(err):match("function expected"), "err " .. tostring(err))
end)

test("a task cancelled by a cleanup its own cancel ran unwinds at once", function()
  local after = {}
  local m = spawn(function()
    local me = current()
    local c = spawn(function()
      local _ <close> = finally(function() me:cancel() end)
      wait(math.huge)
    end)
    c:cancel()
    after[#after + 1] = "cancel returned"
    wait(1)
  end)
  wait()
  assert(m.status == "cancelled", "the task is " .. m.status)
  assert(#after == 0, "it ran on after its cancel: " .. table.concat(after, ","))
end)

test("a task cancelled by a callback of the future it resolved unwinds at once", function()
  local after = 0
  local f = future()
  local m = spawn(function()
    local me = current()
    f:on_done(function() me:cancel() end)
    f:resolve(1)
    after = after + 1
  end)
  wait()
  assert(m.status == "cancelled" and after == 0, m.status .. ", ran on " .. after)
end)
