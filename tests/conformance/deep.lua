-- Deep recursion, stack overflow and long loops, inside nested coroutines.
local function depth(n) if n == 0 then return 0 end return 1 + depth(n - 1) end
print(depth(10000))
local co = coroutine.wrap(function()
  local inner = coroutine.wrap(function() return depth(150000) end)
  return inner()
end)
print(co())
local function runaway() return 1 + runaway() end
local ok, err = pcall(runaway)
print(ok, err)
print(coroutine.wrap(function() return select(2, pcall(runaway)) end)())
local function cstack(n) return pcall(cstack, n + 1) end
print(cstack(0))
local total = 0
for i = 1, 2000000 do total = total + i % 7 end
print(total)
local gen = coroutine.wrap(function() local s = 0 for i = 1, 2000000 do s = s + i end coroutine.yield(s) end)
print(gen())
local str = string.rep("a", 100000)
print(#str:gsub("a", "bb"), select(2, str:gsub("a", "")))
local t = {}
for i = 1, 200000 do t[i] = (i * 7919) % 1000 end
table.sort(t)
print(t[1], t[100000], t[200000])
print(select("#", table.unpack(t, 1, 5000)))
print(pcall(table.unpack, t, 1, 1e7))
print(pcall(string.rep, "x", -1))
print("done")
