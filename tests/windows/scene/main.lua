-- Recorded on one system and replayed with --verify on the other (make
-- test-windows): modules, weft.start, timers, signals, channels, a job on
-- the worker threads, the random generator and the wall clock.
local route = require "lib.route"

local arrived = signal("arrived")
local mail = channel(2)
local walker = weft.start("lib.route", "hero", arrived)

spawn(function()
  for i = 1, 5 do mail:send(i * i) end
  mail:close()
end)
local sum = 0
while true do
  local v = mail:recv()
  if v == nil then break end
  sum = sum + v
end
print(("%d  the channel carried %d"):format(frame(), sum))

local who = wait(arrived)
print(("%d  %s arrived after %s"):format(frame(), who, route.describe(now())))
wait(walker)

local path = wait(job("find_path", {"....", ".##.", "...."}, 1, 1, 4, 3))
print(("%d  a path of %d steps, ending at %d,%d"):format(frame(), #path, path[#path].x, path[#path].y))

local ticks = 0
local ticker = every(0.1, function() ticks = ticks + 1 end)
wait(0.55)
ticker:cancel()
local rolls = {}
for i = 1, 4 do rolls[i] = math.random(1, 100) end
print(("%d  %d ticks; rolls %s; %s; %.3f"):format(frame(), ticks, table.concat(rolls, " "),
  os.date("!%Y", os.time()) >= "2024" and "a recent year" or "an old clock", 1 / 3))
