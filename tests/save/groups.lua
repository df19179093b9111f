-- Groups paused and scaled, a cancel, <close> pending, nested waits.
local slow = group{name = "slow", time_scale = 0.5}
local paused = group{name = "paused"}
slow:spawn(function()
  for k = 1, 5 do local dt = wait(0.1) print("slow", k, string.format("%.3f", dt), frame()) end
end)
paused:spawn(function()
  for k = 1, 5 do wait(0.05) print("paused group", k, frame()) end
end)
local closer = spawn(function()
  local _ <close> = finally(function() print("cleanup ran", frame()) end)
  local inner = spawn(function() wait(10) end)
  wait(inner)
end)
spawn(function()
  local ok, err = pcall(function()
    wait(0.2)
    error("boom")
  end)
  print("pcall", ok, err, frame())
end)
wait(0.1)
paused:pause()
wait(0.3)
paused:resume()
wait(0.2)
closer:cancel()
slow.time_scale = 2
wait(0.5)
print("end", frame(), string.format("%.3f", now()))
