-- The script tests/dap/vscode_test.js debugs (line numbers matter).
local title = "Moon \"Idol\"\nat night"
local box = {name = "box", ["odd key"] = 1, list = {10, 20}}
local steps = 0
local function tick()
  steps = steps + 1
  -- a comment: a breakpoint here moves to the return

  return steps
end
while true do
  tick()
  tick()
  wait()
  if steps > 100000 then print(title, box) end
end
