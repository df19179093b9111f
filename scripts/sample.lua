-- A small scene for `make run` without a window: two walkers and a narrator,
-- written the way a cinematic is written — straight-line, waiting on values.
local function walk(name, steps, pace)
  for i = 1, steps do
    print(("%6.2f  %s takes step %d"):format(now(), name, i))
    wait(pace)
  end
  return name
end

print("The scene begins.")
local hero = spawn(walk, "hero", 4, 0.5)
local guard = spawn(walk, "guard", 3, 0.7)
local first_done = wait(hero)
print(("%6.2f  %s arrived first"):format(now(), first_done))
wait(guard)
local ticks = 0
local clock = every(0.25, function() ticks = ticks + 1 end)
wait(1)
clock:cancel()
print(("%6.2f  the narrator counted %d ticks in one second"):format(now(), ticks))
print("The scene ends.")
