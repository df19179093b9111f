-- Writes a random program for the save tests (weft run gen.lua SEED):
-- a few tasks in a few groups, each a loop of random steps that wait in
-- every way weft offers and print what they see, so a loaded run that
-- goes on differently prints something else. The same seed writes the
-- same program.
local seed = tonumber(arg and arg[1]) or 1
math.randomseed(seed)
local R = math.random

local out = {}
local function emit(s) out[#out + 1] = s end

local NS, NC, NF, NG = R(1, 3), R(1, 2), R(1, 3), R(1, 3)
emit(("math.randomseed(%d)"):format(seed))
emit("local S, C, F, G = {}, {}, {}, {}")
emit("local log = {}")
emit(("for i = 1, %d do S[i] = signal('s' .. i) end"):format(NS))
emit(("for i = 1, %d do C[i] = channel(%d) end"):format(NC, R(0, 3)))
emit(("for i = 1, %d do F[i] = future() end"):format(NF))
emit(("for i = 1, %d do G[i] = group{name = 'g' .. i, time_scale = %s} end"):format(NG,
  ({"1", "0.5", "2", "1.5"})[R(1, 4)]))
emit("local shared = {n = 0, keys = {}}")
emit("local function say(...) print(frame(), ...) end")

-- One step of a task body, as text (t: the task's number).
local function step(t)
  local k = R(1, 20)
  if k == 1 then return ("wait(%0.2f)"):format(R(0, 30) / 100)
  elseif k == 2 then return "wait()"
  elseif k == 3 then return ("say(%d, 'sig', wait(first{S[%d], %0.2f}))"):format(t, R(1, NS), R(5, 40) / 100)
  elseif k == 4 then return ("S[%d]:fire(%d, frame())"):format(R(1, NS), t)
  elseif k == 5 then return ("if not C[%d].closed then C[%d]:try_send(%d) end"):format(R(1, NC), R(1, NC), t)
  elseif k == 6 then return ("say(%d, 'recv', C[%d]:try_recv())"):format(t, R(1, NC))
  elseif k == 7 then
    local f = R(1, NF)
    return ("if F[%d].state == 'pending' then F[%d]:resolve(%d) else say(%d, 'f', F[%d]:result()) end"):format(f, f, t, t, f)
  elseif k == 8 then return ("say(%d, 'ff', pcall(wait, timeout(F[%d], %0.2f)))"):format(t, R(1, NF), R(5, 30) / 100)
  elseif k == 9 then return ("shared.n = shared.n + %d; shared.keys['k' .. (shared.n %% 13)] = %d"):format(R(1, 9), t)
  elseif k == 10 then return "do local ks = {} for k in pairs(shared.keys) do ks[#ks + 1] = k end say('keys', table.concat(ks, ',')) end"
  elseif k == 11 then return ("say(%d, 'rand', math.random(1000))"):format(t)
  elseif k == 12 then return ("say(%d, 'pc', pcall(function() wait(%0.2f) error('e%d', 0) end))"):format(t, R(0, 20) / 100, t)
  elseif k == 13 then
    return ("do local _ <close> = finally(function() say(%d, 'closed') end) wait(%0.2f) end"):format(t, R(0, 20) / 100)
  elseif k == 14 then return ("local g = G[%d] if R2 then g:pause() else g:resume() end R2 = not R2"):format(R(1, NG))
  elseif k == 15 then return ("say(%d, 'child', wait(spawn(function() wait(%0.2f) return %d end)))"):format(t, R(0, 20) / 100, t)
  elseif k == 16 then return ("say(%d, 'gen', gen%d())"):format(t, t)
  elseif k == 17 then -- a finalizer: the object dropped at once, collected soon
    return ("setmetatable({}, {__gc = function() say(%d, 'gc') end}) collectgarbage()"):format(t)
  elseif k == 18 then return ("G[%d].time_scale = %s"):format(R(1, NG), ({"0.5", "1", "2", "1.25"})[R(1, 4)])
  elseif k == 19 then -- a send that may wait for room (or fail: closed)
    return ("say(%d, 'send', pcall(C[%d].send, C[%d], %d))"):format(t, R(1, NC), R(1, NC), t)
  else return ("say(%d, 'job', #wait(job('read_file', 'castle.level')))"):format(t)
  end
end

local NT = R(2, 6)
for t = 1, NT do
  emit(("local gen%d = coroutine.wrap(function() for i = 1, 1e9 do coroutine.yield(i * %d) end end)"):format(t, t))
  local body = {}
  for _ = 1, R(2, 6) do body[#body + 1] = "    " .. step(t) end
  emit(("G[%d]:spawn(function()\n  for round = 1, %d do\n%s\n    say(%d, 'round', round)\n  end\nend)"):format(
    R(1, NG), R(3, 12), table.concat(body, "\n"), t))
end
emit("for i = 1, 90 do wait() end")
emit("for i = 1, #G do G[i]:resume() end")
emit("say('end', shared.n, now())")
print(table.concat(out, "\n"))
