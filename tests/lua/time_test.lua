-- Time: now(), realtime(), frame(), and the waiting helpers built on them.

local DT = 1 / 60

local function near(a, b, eps)
  return math.abs(a - b) <= (eps or 1e-6)
end

test("now() is game time: dt per frame at scale 1", function()
  local t0 = now()
  wait_frames(6)
  assert(near(now() - t0, 6 * DT), "now() advanced " .. (now() - t0) .. " in 6 frames")
end)

test("frame() counts steps", function()
  assert(frame() == 0, "frame() " .. frame())
  for i = 1, 5 do
    wait()
    assert(frame() == i, "frame() " .. frame() .. " in step " .. i)
  end
  assert(math.type(frame()) == "integer", "frame() is not an integer")
end)

test("realtime() is not scaled by time_scale", function()
  time_scale(0.5)
  local n0, r0 = now(), realtime()
  for _ = 1, 10 do
    local n1, r1 = now(), realtime()
    wait()
    assert(near(realtime() - r1, DT), "realtime advanced " .. (realtime() - r1) .. " in a frame")
    assert(near(now() - n1, DT / 2), "now() advanced " .. (now() - n1) .. " in a frame")
  end
  assert(near(realtime() - r0, 10 * DT), "realtime over 10 frames " .. (realtime() - r0))
  assert(near(now() - n0, 5 * DT), "now() over 10 frames " .. (now() - n0))
  time_scale(1)
end)

test("realtime() is not stopped by pausing a group", function()
  local g = group{}
  local t = g:spawn(function() wait(10) end)
  g:pause()
  local r0 = realtime()
  wait_frames(3)
  assert(near(realtime() - r0, 3 * DT), "realtime advanced " .. (realtime() - r0))
  t:cancel()
end)

test("now() is the global game clock, not the task's group clock", function()
  local g = group{time_scale = 0.5}
  local t = g:spawn(function()
    local n0, g0 = now(), g.now
    wait_frames(6)
    return now() - n0, g.now - g0
  end)
  local dn, dg = wait(t)
  assert(near(dn, 6 * DT), "now() advanced " .. dn .. " in a 0.5 group")
  assert(near(dg, 3 * DT), "group clock advanced " .. dg)
end)

test("every task sees the same frame() within a step", function()
  local seen = {}
  local ts = {}
  for i = 1, 5 do
    ts[i] = spawn(function()
      wait(0.1)
      seen[i] = frame()
    end)
  end
  wait(ts)
  for i = 2, 5 do assert(seen[i] == seen[1], "task " .. i .. " saw frame " .. seen[i]) end
  assert(seen[1] == 6, "woke on frame " .. seen[1])
end)

test("wait_realtime(s) ignores the time scale", function()
  time_scale(0.25)
  local f, r0 = frame(), realtime()
  local e = wait_realtime(0.5)
  assert(frame() - f == 30, "wait_realtime(0.5) took " .. (frame() - f) .. " frames")
  assert(near(realtime() - r0, 0.5), "took " .. (realtime() - r0) .. " real s")
  assert(type(e) == "number" and near(e, 0.5), "returned " .. tostring(e))
  time_scale(1)
end)

test("wait_realtime(s) runs while game time is frozen", function()
  time_scale(0)
  local f = frame()
  wait_realtime(0.25)
  assert(frame() - f == 15, "took " .. (frame() - f) .. " frames")
  time_scale(1)
end)

test("wait_realtime(s) ignores a group's scale", function()
  local g = group{time_scale = 0.1}
  local t = g:spawn(function()
    local f = frame()
    wait_realtime(0.5)
    return frame() - f
  end)
  local frames = wait(t)
  assert(frames == 30, "took " .. frames .. " frames in a 0.1 group")
end)

test("wait_realtime keeps counting while the task's group is paused", function()
  local g = group{}
  local t = g:spawn(function()
    wait_realtime(0.5)
    return realtime()
  end)
  wait_frames(6)
  g:pause()
  wait_realtime(1) -- long past the real-time deadline
  g:resume()
  local resumed = realtime()
  local woke = wait(t)
  -- the time paused counted: the task does not sleep another 0.4 s
  assert(woke <= resumed + DT + 1e-9, "woke at " .. woke .. ", resumed at " .. resumed)
end)

test("wait_realtime(0) resumes next frame", function()
  local f = frame()
  wait_realtime(0)
  assert(frame() == f + 1, "woke on frame " .. frame())
end)

test("wait_frames(n) resumes n frames later", function()
  local f = frame()
  wait_frames(5)
  assert(frame() == f + 5, "woke on frame " .. frame() .. " after " .. f)
  wait_frames(1)
  assert(frame() == f + 6, "wait_frames(1) woke on frame " .. frame())
end)

test("wait_frames counts frames, not game time", function()
  time_scale(0.1)
  local f = frame()
  wait_frames(3)
  assert(frame() == f + 3, "woke on frame " .. frame())
  time_scale(1)
end)

test("wait_frames(0) returns at once", function()
  local f = frame()
  wait_frames(0)
  assert(frame() == f, "wait_frames(0) yielded")
end)

test("wait_until(pred) returns at once when pred is already true", function()
  local calls = 0
  local f = frame()
  local v = wait_until(function() calls = calls + 1; return "yes" end)
  assert(frame() == f, "wait_until yielded")
  assert(calls == 1, "pred called " .. calls .. " times")
  assert(v == "yes", "returned " .. tostring(v))
end)

test("wait_until(pred) checks pred once a frame until it is true", function()
  local calls, frames = 0, {}
  local start = frame()
  local v = wait_until(function()
    calls = calls + 1
    frames[#frames + 1] = frame()
    return frame() >= start + 10 and frame()
  end)
  assert(v == start + 10, "returned " .. tostring(v))
  assert(frame() == start + 10, "returned on frame " .. frame())
  assert(calls == 11, "pred called " .. calls .. " times in 10 frames")
  for i = 2, #frames do
    assert(frames[i] == frames[i - 1] + 1, "two checks in frame " .. frames[i])
  end
end)

test("wait_until sees a change made by another task", function()
  local flag = false
  spawn(function() wait(0.5); flag = true end)
  wait_until(function() return flag end)
  assert(flag, "returned before flag was set")
  assert(frame() >= 30 and frame() <= 31, "noticed on frame " .. frame())
end)

test("wait_until raises the predicate's error", function()
  local ok, err = pcall(wait_until, function()
    if frame() > 2 then error("pred broke") end
  end)
  assert(not ok and tostring(err):match("pred broke"), "err " .. tostring(err))
end)

test("wait_while(pred) returns at once when pred is already false", function()
  local calls = 0
  local f = frame()
  wait_while(function() calls = calls + 1; return false end)
  assert(frame() == f, "wait_while yielded")
  assert(calls == 1, "pred called " .. calls .. " times")
end)

test("wait_while(pred) waits while pred is true, checking once a frame", function()
  local calls = 0
  local start = frame()
  wait_while(function()
    calls = calls + 1
    return frame() < start + 7
  end)
  assert(frame() == start + 7, "returned on frame " .. frame())
  assert(calls == 8, "pred called " .. calls .. " times")
end)

test("a task waiting in wait_until can be cancelled", function()
  local calls = 0
  local t = spawn(function()
    wait_until(function() calls = calls + 1; return false end)
  end)
  wait_frames(3)
  t:cancel()
  local at = calls
  wait_frames(3)
  assert(calls == at, "pred called after cancel")
  assert(t.status == "cancelled", "status " .. t.status)
end)

test("a paused group's wait_until is not checked while paused", function()
  local g = group{}
  local calls = 0
  local t = g:spawn(function()
    wait_until(function() calls = calls + 1; return false end)
  end)
  g:pause()
  local at = calls
  wait_frames(5)
  assert(calls == at, "pred checked " .. (calls - at) .. " times while paused")
  t:cancel()
end)
