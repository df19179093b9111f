local n = 0
for round = 1, 5 do
  local s = 0
  for i = 1, 200 do s = s + i end
  n = n + 1
  wait()
end
print("rounds", n)
