local function add(a, b)
  local s = a + b
  return s
end
local total = 0
for i = 1, 1000000 do
  total = add(total, i)
  wait()
end
