local f, s, ch = future(), signal("s"), channel(1)
spawn(function() wait(0.1) f:resolve(1, 2) s:fire("x") end)
local c = s:connect(function(v) ch:try_send(v) end)
print(wait{f, s})
print(pcall(f.resolve, f, 3), f.state, f:result())
s:set(1) wait(s) s:reset() c:disconnect()
spawn(function() for i = 1, 3 do ch:send(i) end ch:close() end)
while ch:recv() do end
print(pcall(wait, timeout(future(), 0.05)), wait(first{future(), 0.01}), wait(all{}))
local p = wait(job("find_path", {"...", ".#.", "..."}, 1, 1, 3, 3))
print(pcall(wait, job("read_file", "missing")))
for _, info in ipairs(weft.tasks()) do print(info.name, info.waiting) end
