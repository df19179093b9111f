print(xpcall(error, function(m) return m end, "x"))
spawn(function() xpcall(error, function() while true do end end, "boom") end)
print(package.searchpath("a.b", "scripts/?.lua;?.lua", ".", "/"))
local rows, n = weft.tasks{by = "avg_ms", first = 1, count = 3}
print(#rows, n, pcall(weft.tasks, {by = 1}))
print(load(function() return "x = 1 " end))
local g = group{name = "g"}
g:spawn(function() for i = 1, 10 do g:spawn(wait, 1) end wait(1) end)
print(g.ms, g.avg_ms, g.worst_ms)
local s = signal()
for i = 1, 100 do s:connect(function() error(("e"):rep(9000)) end) end
s:fire()
print(("ab"):rep(100):gsub("a", "x"))
wait(0.1)
