-- Each engine call a script can make, called 10^5 times on one object that
-- grows with every call (one signal's connections, one future's waiters,
-- one group's tasks, one channel's queue...): the cost of the first 10^4
-- calls and of the last 10^4, per call. Flat means O(1) amortized; a
-- quadratic call shows a ratio near 10 (one line each).
local N = BENCH and BENCH.n or 100000
local K = N // 10
local clock = os.clock

local function forever() wait(math.huge) end

local cases, groups = {}, {}
local function case(name, setup, call)
  cases[#cases + 1] = {name = name, setup = setup, call = call}
end

case("signal:connect", function() return signal() end,
  function(s) s:connect(forever) end)
case("connect+disconnect", function() return signal() end,
  function(s) s:connect(forever):disconnect() end)
case("signal waiters (spawn+wait)", function() return signal() end,
  function(s) spawn(wait, s) end)
case("future waiters (spawn+wait)", function() return future() end,
  function(f) spawn(wait, f) end)
case("future:on_done", function() return future() end,
  function(f) f:on_done(forever) end)
case("first{f} on one future", function() return future() end,
  function(f) first{f} end)
case("all{f} on one future", function() return future() end,
  function(f) all{f} end)
case("timeout(f, s) on one future", function() return future() end,
  function(f) timeout(f, 1e6) end)
case("group:spawn", function() groups[1] = group{name = "g"}; return groups[1] end,
  function(g) g:spawn(forever) end)
case("spawn (child of one task)", function() return nil end,
  function() spawn(forever) end)
case("channel:send (unbounded)", function() return channel() end,
  function(ch) ch:send(1) end)
case("channel:try_send (cap N)", function() return channel(N + 1) end,
  function(ch) ch:try_send(1) end)
case("future()", function() return nil end, function() future() end)
case("signal()", function() return nil end, function() signal() end)

-- One case per state (BENCH.case, from api_cost.c): a case's cancelled
-- tasks and dropped handles are garbage the next case's calls would pay
-- the collector for, which is not a cost of the next call.
if BENCH then BENCH.cases = #cases end
local c = cases[BENCH and BENCH.case or 1]
local parent = spawn(function()
  local obj = c.setup()
  local call = c.call
  collectgarbage()
  local t0 = clock()
  for _ = 1, K do call(obj) end
  local first = clock() - t0
  for _ = K + 1, N - K do call(obj) end
  collectgarbage()
  t0 = clock()
  for _ = N - K + 1, N do call(obj) end
  local last = clock() - t0
  if BENCH then
    BENCH.name, BENCH.first, BENCH.last = c.name, first / K * 1e9, last / K * 1e9
  else
    print(string.format("  %-32s %9.0f %9.0f %7.2f", c.name, first / K * 1e9,
                        last / K * 1e9, last / first))
  end
  wait(math.huge)
end)
parent:cancel()
for _, g in ipairs(groups) do g:cancel() end
wait()
