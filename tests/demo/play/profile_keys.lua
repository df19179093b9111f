-- F3 pairs write numbered files (run by tests/demo/run.sh with --profile
-- OUT.json): the first F3 stops the run's profile (OUT.json), each later
-- pair writes OUT-1.json, OUT-2.json, none over another.
local check = require("lib.check")

check.skip_intro()
tap("f3")                  -- the run's profile, written
wait(0.2)
for _ = 1, 2 do
  tap("f3")                -- a new one...
  wait(1)
  tap("f3")                -- ...written to the next number
  wait(0.2)
end
