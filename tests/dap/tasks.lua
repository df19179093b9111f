local g = group{name = "guards"}
local function patrol(name, n)
  local count = 0
  local route = {}
  for i = 1, 150 do route[i] = i * 2 end
  while count < n do
    count = count + 1
    wait(0.5)
    print(name .. " step " .. count)
  end
  return count
end
local t = g:spawn(patrol, "gate_guard", 3)
local total = wait(t)
print("total", total)
