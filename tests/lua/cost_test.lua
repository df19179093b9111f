-- Engine calls cost O(1) or O(their input), however big the thing they
-- grow gets. Each case makes tens of thousands of calls on one object and
-- checks the CPU time against a ceiling some twenty times what a linear
-- cost takes on a slow machine: a quadratic call misses it by far (the
-- per-call figures are in `make bench`, api-cost).

local function cpu_ms(fn)
  local t0 = os.clock()
  fn()
  return (os.clock() - t0) * 1000
end

test("40,000 connects on one signal take well under a second", function()
  local s = signal()
  local ms = cpu_ms(function()
    for _ = 1, 40000 do s:connect(function() end) end
  end)
  assert(ms < 1000, string.format("40,000 connects took %.0f ms", ms))
end)

test("connects after disconnects keep the list bounded and fire only the live ones", function()
  local s = signal()
  local n = 0
  local ms = cpu_ms(function()
    for _ = 1, 40000 do s:connect(function() n = n + 1 end):disconnect() end
  end)
  assert(ms < 1000, string.format("40,000 connect+disconnect took %.0f ms", ms))
  local c = s:connect(function() n = n + 1 end)
  s:fire()
  wait()
  assert(n == 1, "ran " .. n .. " connections")
  c:disconnect()
  s:fire()
  wait()
  assert(n == 1, "a disconnected connection ran")
end)
