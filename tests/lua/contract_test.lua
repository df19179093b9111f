-- Three promises of the contract, to the letter: real-time waits ignore
-- pause, the pass before the first step runs the tasks it wakes, and a
-- lone nil is a value.

test("wait_realtime(s) in a paused group resumes on time", function()
  local g = group{ name = "menu" }
  local woke
  g:spawn(function()
    wait_realtime(0.5)
    woke = frame()
  end)
  g:pause()
  wait_frames(40)
  assert(woke == 30, "wait_realtime(0.5) in a paused group woke at frame " .. tostring(woke))
  assert(g:tasks()[1] == nil, "the task did not finish")
end)

test("a task paused after its real-time wait goes on pausing its game-time waits", function()
  local g = group{}
  local at = {}
  g:spawn(function()
    wait_realtime(0.25)
    at[1] = frame()
    wait(0.25)                            -- game time: stopped while paused
    at[2] = frame()
  end)
  g:pause()
  wait_frames(60)
  assert(at[1] == 15, "real-time wait woke at " .. tostring(at[1]))
  assert(at[2] == nil, "a game-time wait in a paused group woke at " .. tostring(at[2]))
  g:resume()
  wait_frames(20)
  assert(at[2] == 75, "game-time wait after resume woke at " .. tostring(at[2]))
end)

test("tasks woken before the first step run in that same pass", function()
  assert(frame() == 0)
  local f, s, ch = future(), signal(), channel()
  local seen = {}
  spawn(function() wait(f); seen[#seen + 1] = "future " .. frame() end)
  spawn(function() wait(s); seen[#seen + 1] = "signal " .. frame() end)
  spawn(function()
    local v = ch:recv()
    seen[#seen + 1] = "channel " .. v .. " " .. frame()
  end)
  f:resolve()
  s:fire()
  ch:send("v")
  local before = #seen
  wait()                                  -- the woken tasks run as this task yields
  assert(before == 0, "woken tasks ran inside the waking call")
  local got = table.concat(seen, ", ")
  assert(got == "future 0, signal 0, channel v 0", "woken at: " .. got)
end)

test("f:resolve(nil) keeps one nil value", function()
  local f = future()
  f:resolve(nil)
  assert(select("#", f:result()) == 1, "result() gave " .. select("#", f:result()) .. " values")
  assert(select("#", wait(f)) == 1, "wait(f) on a done future gave " .. select("#", wait(f)))
  local g = future()
  g:resolve()
  assert(select("#", g:result()) == 0, "resolve() with no value gave " .. select("#", g:result()))
end)

test("f:resolve(...) through after(s, fn, nil) keeps one nil value", function()
  local f = future()
  after(0.1, function(...) f:resolve(...) end, nil)
  local n = select("#", wait(f))
  assert(n == 1, "wait(f) gave " .. n .. " values")
  assert(select("#", f:result()) == 1, "result() gave " .. select("#", f:result()) .. " values")
end)

-- Two places where weft departs from the contract's frame, as docs/decisions.md
-- ("Decisions where the contract is silent") states them.

test("a task due this frame waits for the resume when an earlier task of the frame pauses its group", function()
  local g = group{name = "g"}
  local log = {}
  spawn(function() wait(0.1) g:pause() log[#log + 1] = "pauser " .. frame() end)
  g:spawn(function() wait(0.1) log[#log + 1] = "held " .. frame() end)
  wait(0.5)
  assert(table.concat(log, ",") == "pauser 6", table.concat(log, ","))
  local f = frame()
  g:resume()
  log[#log + 1] = "resumer " .. f
  wait()
  local want = "pauser 6,resumer " .. f .. ",held " .. f
  assert(table.concat(log, ",") == want, table.concat(log, ","))
end)

test("clocks count whole nanoseconds: deadlines closer than 1 ns tie and wake in sleep order", function()
  local log = {}
  spawn(function() wait(0.1 + 4e-10) log[#log + 1] = "a" end) -- 0.4 ns later, slept first
  spawn(function() wait(0.1) log[#log + 1] = "b" end)
  spawn(function() wait(0.1 + 3e-9) log[#log + 1] = "c" end) -- 3 ns later: after
  spawn(function() wait(0.1) log[#log + 1] = "d" end)
  wait(0.5)
  assert(table.concat(log, ",") == "a,b,d,c", table.concat(log, ","))
end)
