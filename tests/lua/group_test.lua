-- Groups: clocks with their own scale, pause and resume, cancel, ownership.

local DT = 1 / 60

local function near(a, b, eps)
  return math.abs(a - b) <= (eps or 1e-6)
end

local function join(t) return table.concat(t, ",") end

local function contains(list, x)
  for _, v in ipairs(list) do if v == x then return true end end
  return false
end

test("group{} returns a group handle", function()
  local g = group{name = "enemies"}
  assert(type(g) == "userdata", "group is a " .. type(g))
  assert(g.name == "enemies", "name " .. tostring(g.name))
  assert(g.time_scale == 1, "default time_scale " .. tostring(g.time_scale))
  assert(tostring(g):match("enemies"), "tostring " .. tostring(g))
  local g2 = group()
  assert(g2 ~= g, "two groups compare equal")
end)

test("group time_scale 0.5 makes wait(1) take 2 s of now()", function()
  local g = group{time_scale = 0.5}
  local t = g:spawn(function()
    local start = now()
    local e = wait(1)
    return now() - start, e, frame()
  end)
  local took, elapsed, f = wait(t)
  assert(near(took, 2), "wait(1) took " .. took .. " s of now()")
  assert(near(elapsed, 1), "wait returned " .. elapsed .. " (group seconds)")
  assert(f == 120, "woke on frame " .. f)
end)

test("nested group scales multiply", function()
  local outer = group{time_scale = 0.5}
  local inner = group{time_scale = 0.25, parent = outer}
  assert(inner.parent == outer, "parent handle differs")
  local t = inner:spawn(function()
    local start = now()
    wait(1)
    return now() - start
  end)
  local took = wait(t)
  assert(near(took, 8), "wait(1) at 0.5 x 0.25 took " .. took .. " s")
end, {frames = 600})

test("time_scale(s) sets the global scale and time_scale() reads it", function()
  assert(time_scale() == 1, "default scale " .. time_scale())
  local r = time_scale(0.5)
  assert(r == 0.5, "time_scale(0.5) returned " .. tostring(r))
  assert(time_scale() == 0.5, "scale reads " .. time_scale())
  assert(weft.root.time_scale == 0.5, "root group scale " .. weft.root.time_scale)
  local rt, t0 = realtime(), now()
  wait(1)
  assert(near(realtime() - rt, 2), "wait(1) at global 0.5 took " .. (realtime() - rt) .. " real s")
  assert(near(now() - t0, 1), "now() advanced " .. (now() - t0))
  time_scale(1)
end)

test("the global scale multiplies group scales", function()
  time_scale(2)
  local g = group{time_scale = 0.25}
  local t = g:spawn(function()
    local rt = realtime()
    wait(1)
    return realtime() - rt
  end)
  local took = wait(t)
  assert(near(took, 2), "wait(1) at 2 x 0.25 took " .. took .. " real s")
  time_scale(1)
end)

test("time_scale(0) freezes game time but not real time", function()
  time_scale(0)
  local woke = false
  local t = spawn(function() wait(0.1); woke = true end)
  local n, rt = now(), realtime()
  wait_realtime(1)
  assert(now() == n, "now() moved to " .. now())
  assert(near(realtime() - rt, 1), "realtime moved " .. (realtime() - rt))
  assert(not woke, "a sleep woke with time frozen")
  time_scale(1)
  wait(t)
  assert(woke, "sleep did not wake after unfreezing")
end)

test("changing g.time_scale mid-sleep changes when the sleep ends", function()
  local g = group{}
  local t = g:spawn(function() wait(1) end)
  wait(0.5)
  g.time_scale = 0.5 -- the remaining 0.5 group-seconds now take 1 s
  assert(g.time_scale == 0.5, "time_scale reads " .. g.time_scale)
  wait(t)
  assert(near(now(), 1.5), "finished at " .. now())
end)

test("a group task's after and every run on the group clock", function()
  local g = group{time_scale = 0.5}
  local runs = {}
  local t = g:spawn(function()
    local a = after(1, function() return now() end)
    local e = every(1, function() runs[#runs + 1] = now() end)
    local at = wait(a)
    wait(1.05) -- group time 2.05: every has run at group times 1 and 2
    e:cancel()
    return at
  end)
  local at = wait(t)
  assert(near(at, 2), "after(1) ran at " .. at)
  assert(#runs == 2 and near(runs[1], 2) and near(runs[2], 4), "every ran at " .. join(runs))
end, {frames = 1000})

test("pause stops a group's tasks and resume continues them", function()
  local g = group{}
  local n = 0
  local t = g:spawn(function()
    while true do n = n + 1; wait() end
  end)
  wait(0.1)
  g:pause()
  assert(g.paused == true, "g.paused " .. tostring(g.paused))
  local at = n
  wait(0.5)
  assert(n == at, "a paused task ran " .. (n - at) .. " times")
  assert(t.status == "waiting", "paused task " .. t.status)
  g:resume()
  assert(g.paused == false, "g.paused after resume " .. tostring(g.paused))
  wait(0.1)
  assert(n > at, "task did not run after resume")
  t:cancel()
end)

test("a paused group's clock stops", function()
  local g = group{}
  local t = g:spawn(function() wait(0.5); return now() end)
  wait(0.25)
  g:pause()
  local gnow = g.now
  wait(1)
  assert(g.now == gnow, "group clock moved from " .. gnow .. " to " .. g.now)
  g:resume()
  local woke = wait(t)
  -- 0.25 s before the pause, 1 s paused, 0.25 s after
  assert(near(woke, 1.5), "sleep ended at " .. woke)
end)

test("a task woken in a paused group runs only after resume", function()
  local g = group{}
  local target = spawn(function() wait(0.1) return "v" end)
  local got
  local w = g:spawn(function() got = wait(target) end)
  g:pause()
  wait(target)
  wait(0.2)
  assert(got == nil, "paused task ran")
  g:resume()
  wait(w)
  assert(got == "v", "got " .. tostring(got))
end)

test("pausing a parent group pauses its subgroups", function()
  local parent = group{}
  local child = group{parent = parent}
  local n = 0
  local t = child:spawn(function()
    while true do n = n + 1; wait() end
  end)
  wait()
  parent:pause()
  local at, cnow = n, child.now
  wait(0.5)
  assert(n == at, "subgroup task ran " .. (n - at) .. " times while parent paused")
  assert(child.now == cnow, "subgroup clock moved")
  parent:resume()
  wait(0.1)
  assert(n > at, "subgroup task did not continue after resume")
  t:cancel()
end)

test("resuming a subgroup does not unpause it while its parent is paused", function()
  local parent = group{}
  local child = group{parent = parent}
  local n = 0
  local t = child:spawn(function() while true do n = n + 1; wait() end end)
  parent:pause()
  child:resume()
  local at = n
  wait(0.2)
  assert(n == at, "subgroup ran while its parent was paused")
  parent:resume()
  wait(0.1)
  assert(n > at, "subgroup did not continue")
  t:cancel()
end)

test("pause does not stop other groups", function()
  local a, b = group{}, group{}
  local nb = 0
  local ta = a:spawn(function() while true do wait() end end)
  local tb = b:spawn(function() while true do nb = nb + 1; wait() end end)
  a:pause()
  local at = nb
  wait(0.2)
  assert(nb - at >= 11, "unpaused group ran " .. (nb - at) .. " times in 12 frames")
  ta:cancel(); tb:cancel()
end)

test("g:cancel() cancels the group's tasks", function()
  local g = group{}
  local log = {}
  local ts = {}
  for i = 1, 3 do
    ts[i] = g:spawn(function()
      local _ <close> = finally(function() log[#log + 1] = i end)
      wait(10)
    end)
  end
  g:cancel()
  for i = 1, 3 do assert(ts[i].status == "cancelled", "task " .. i .. " " .. ts[i].status) end
  assert(#log == 3, "cleanups ran " .. #log)
  assert(#g:tasks() == 0, "tasks left " .. #g:tasks())
end)

test("g:cancel() cancels subgroups' tasks", function()
  local g = group{}
  local sub = group{parent = g}
  local subsub = group{parent = sub}
  local a = sub:spawn(function() wait(10) end)
  local b = subsub:spawn(function() wait(10) end)
  g:cancel()
  assert(a.status == "cancelled", "subgroup task " .. a.status)
  assert(b.status == "cancelled", "sub-subgroup task " .. b.status)
end)

test("g:cancel() leaves other groups and the caller alone", function()
  local g, other = group{}, group{}
  local a = g:spawn(function() wait(10) end)
  local b = other:spawn(function() wait(10) end)
  local c = spawn(function() wait(10) end)
  g:cancel()
  assert(a.status == "cancelled", "g's task " .. a.status)
  assert(b.status == "waiting", "other group's task " .. b.status)
  assert(c.status == "waiting", "root task " .. c.status)
  b:cancel(); c:cancel()
end)

test("a group task that cancels its own group unwinds at once", function()
  local g = group{}
  local log = {}
  local t = g:spawn(function()
    local _ <close> = finally(function() log[#log + 1] = "cleanup" end)
    wait()
    g:cancel()
    log[#log + 1] = "after cancel"
  end)
  wait(0.1)
  assert(join(log) == "cleanup", "ran " .. join(log))
  assert(t.status == "cancelled", "status " .. t.status)
end)

test("a group can spawn again after g:cancel()", function()
  local g = group{}
  g:spawn(function() wait(10) end)
  g:cancel()
  local t = g:spawn(function() wait(0.1); return "again" end)
  assert(wait(t) == "again", "group unusable after cancel")
end)

test("g:spawn runs the task at once and returns its handle", function()
  local g = group{}
  local ran, inside = false, nil
  local t = g:spawn(function(a, b)
    ran = a + b == 3
    inside = current()
    wait()
  end, 1, 2)
  assert(ran, "g:spawn did not run the task at once with its arguments")
  assert(inside == t, "handle differs from current()")
  assert(t.group == g, "task's group is not g")
  t:cancel()
end)

test("g:spawn's task is not a child of the caller", function()
  local g = group{}
  local owned
  local caller = spawn(function()
    owned = g:spawn(function() wait(1); return "survived" end)
    wait(10)
  end)
  caller:cancel()
  assert(caller.status == "cancelled", "caller " .. caller.status)
  assert(owned.status == "waiting", "g's task " .. owned.status .. " with its spawner")
  assert(wait(owned) == "survived", "g's task did not finish")
end)

test("g:spawn's task survives its spawner failing", function()
  weft.on_error(function() end)
  local g = group{}
  local owned
  local caller = spawn(function()
    owned = g:spawn(function() wait(0.5); return "ok" end)
    error("spawner fails")
  end)
  assert(caller.status == "failed", "caller " .. caller.status)
  assert(wait(owned) == "ok", "g's task did not survive")
end)

test("g:tasks() lists the group's live tasks", function()
  local g = group{}
  local a = g:spawn(function() wait(10) end)
  local b = g:spawn(function() wait(0.1) end)
  local c = g:spawn(function() return end) -- finished at once
  local list = g:tasks()
  assert(#list == 2, "listed " .. #list)
  assert(contains(list, a) and contains(list, b), "missing a live task")
  assert(not contains(list, c), "a finished task is listed")
  wait(b)
  list = g:tasks()
  assert(#list == 1 and list[1] == a, "after b finished: " .. #list)
  a:cancel()
  assert(#g:tasks() == 0, "after cancel: " .. #g:tasks())
end)

test("g:tasks() does not list subgroup tasks", function()
  local g = group{}
  local sub = group{parent = g}
  local t = sub:spawn(function() wait(10) end)
  assert(#g:tasks() == 0, "parent group lists " .. #g:tasks())
  assert(#sub:tasks() == 1 and sub:tasks()[1] == t, "subgroup lists " .. #sub:tasks())
  t:cancel()
end)

test("a task spawned from a group task belongs to that group", function()
  local g = group{}
  local child, deferred
  local t = g:spawn(function()
    child = spawn(function() wait(10) end)
    deferred = defer(function() wait(10) end)
    wait(10)
  end)
  assert(child.group == g, "spawned child is in " .. tostring(child.group))
  assert(deferred.group == g, "deferred child is in " .. tostring(deferred.group))
  assert(contains(g:tasks(), child), "child not listed in g:tasks()")
  g:cancel()
  assert(child.status == "cancelled" and deferred.status == "cancelled", "children survived")
end)

test("a task's children of a group task live on in the group after it returns", function()
  local g = group{}
  local child
  local t = g:spawn(function()
    child = spawn(function() wait(1) end)
  end)
  assert(t.status == "done", "parent " .. t.status)
  assert(child.group == g, "child's group changed")
  assert(contains(g:tasks(), child), "child not in g:tasks()")
  g:cancel()
  assert(child.status == "cancelled", "child " .. child.status)
end)

test("tasks spawned outside any group belong to the root group", function()
  local t = spawn(function() wait(1) end)
  assert(t.group == weft.root, "task is in " .. tostring(t.group))
  assert(current().group == weft.root, "case task is in " .. tostring(current().group))
  t:cancel()
end)

test("a group created in a group task defaults to that group as parent", function()
  local g = group{time_scale = 0.5}
  local inner
  local t = g:spawn(function()
    inner = group{}
    return inner.parent
  end)
  assert(wait(t) == g, "default parent is not the spawner's group")
  local s = inner:spawn(function()
    local n0 = now()
    wait(1)
    return now() - n0
  end)
  assert(near(wait(s), 2), "subgroup does not inherit the scale")
end)

test("group handles compare equal to themselves everywhere", function()
  local g = group{}
  local seen
  local t = g:spawn(function() seen = current().group; wait() end)
  assert(seen == g, "t.group inside differs from g")
  assert(rawequal(seen, g), "not the same handle object")
  t:cancel()
end)

test("group rejects bad fields", function()
  local ok, err = pcall(group, {time_scale = "fast"})
  assert(not ok, "string time_scale accepted")
  ok, err = pcall(group, {parent = {}})
  assert(not ok and tostring(err):match("parent"), "bad parent: " .. tostring(err))
  ok, err = pcall(group, {name = 5})
  assert(not ok and tostring(err):match("name"), "bad name: " .. tostring(err))
  ok, err = pcall(group, {time_scale = math.huge})
  assert(not ok, "infinite time_scale accepted")
  ok, err = pcall(group, {time_scale = 0 / 0})
  assert(not ok, "NaN time_scale accepted")
end)

test("g.time_scale rejects negative and NaN values", function()
  local g = group{}
  local ok = pcall(function() g.time_scale = -1 end)
  assert(not ok, "negative scale accepted")
  ok = pcall(function() g.time_scale = 0 / 0 end)
  assert(not ok, "NaN scale accepted")
  assert(g.time_scale == 1, "scale changed to " .. g.time_scale)
  ok = pcall(time_scale, -2)
  assert(not ok, "negative global scale accepted")
  assert(time_scale() == 1, "global scale changed to " .. time_scale())
end)
