-- The script tests/dap/vscode_test.js stops at line 9 once a round, all
-- in one stretch of its task (no wait between the stops; with "frame",
-- inside a step, after one wait). The time the debugger holds it there
-- is not its own: only the work after the loop is.
local rounds, where = ...
if where == "frame" then wait() end
local n = 0
for round = 1, tonumber(rounds) do
  n = n + round
end
-- 20 ms of work, preempted at each slice: a runaway only if held time counted.
local t = os.clock() + 0.02
while os.clock() < t do end
wait()
local worst = 0
for _, task in ipairs(weft.tasks()) do
  if task.status == "running" then worst = task.worst_ms end
end
print("rounds", n, "worst frame (ms)", worst)
