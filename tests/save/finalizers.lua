-- Finalizers: tables with __gc dropped before a save run after it, in
-- the loaded run as in the saved one; those kept still hold theirs.
local kept = {}
local function make(name)
  return setmetatable({name = name}, {__gc = function(o) print("collected", o.name, frame()) end})
end
for i = 1, 6 do kept[i] = make("kept" .. i) end
for round = 1, 8 do
  make("dropped" .. round) -- garbage at once
  if round % 3 == 0 then kept[round // 3] = nil end
  collectgarbage()
  wait(0.05)
  print("round", round, frame())
end
kept = nil
collectgarbage()
wait(0.3)
print("end", frame())
