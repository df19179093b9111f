-- Three tasks burning 1x, 2x and 4x the processor time each frame, for
-- the profiler's test (tests/profile/profile_test.js): their per-task
-- totals keep those ratios. The file's task waits on each: their ends
-- wake it (the trace's flow arrows).
local N = 20000
local function churn(n)
  local x = 0
  for i = 1, n do x = x + math.sin(i) end
  return x
end
local function burn(name, k)
  local t = spawn(function()
    for _ = 1, 60 do
      churn(N * k)
      wait()
    end
  end)
  t.name = name
  return t
end
local a, b, c = burn("burn1", 1), burn("burn2", 2), burn("burn4", 4)
wait(a)
wait(b)
wait(c)
