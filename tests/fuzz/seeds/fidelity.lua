-- Plain-Lua surface: coroutines inside tasks, wrap, close, yields across
-- pcall, load readers, metatables on _ENV, __gc refused, library copies.
local gen = coroutine.wrap(function() for i = 1, 3 do coroutine.yield(i) end end)
print(gen(), pcall(gen), coroutine.running())
local co = coroutine.create(function(a) local x <close> = setmetatable({}, {__close = function() end}) return coroutine.yield(a) end)
print(coroutine.resume(co, 1), coroutine.close(co), coroutine.status(co))
print(pcall(setmetatable, {}, {__gc = function() end}), setmetatable({}, {__gc = true}))
local parts = {"return ", "1"}
print(load(function() return table.remove(parts, 1) end)(), load("\27Lua"), load("x", "c", "b"))
setmetatable(_ENV, {__index = function(_, k) return k end})
print(undefined_name, string.format, rawget(math, "pi"))
setmetatable(_ENV, nil)
string.upper = nil; math.pi = 3
print(("x"):upper(), collectgarbage("count") > 0, pcall(collectgarbage))
spawn(function() while true do coroutine.wrap(function() for i = 1, 100 do end end)() end end)
spawn(function() local c = coroutine.wrap(function() while true do end end) pcall(c) end)
wait(0.1)
