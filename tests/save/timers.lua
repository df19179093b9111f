-- Sleeps of every kind in several tasks: the same deadlines (sleep order),
-- next-frame waits, helpers that keep their own counters.
local log = {}
for i = 1, 4 do
  spawn(function()
    for k = 1, 6 do
      local dt = wait(0.05 * i)
      print("sleeper", i, k, string.format("%.4f", dt), frame())
    end
  end)
end
spawn(function()
  for k = 1, 12 do wait() print("every frame", k, frame()) end
end)
local ticks = 0
local ticker = every(0.1, function() ticks = ticks + 1 print("tick", ticks, frame()) end)
after(0.5, function() print("after", frame()) end)
wait_frames(30)
ticker:cancel()
wait(0.3)
print("done", frame(), string.format("%.4f", now()))
