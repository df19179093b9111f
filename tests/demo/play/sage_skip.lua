-- weft-demo --play cinematics.sage: skipping the cinematic while old Bram
-- (fetched inside it with entity("sage"), not passed in the scene) walks
-- stops him too (run by tests/demo/run.sh).
local check = require("lib.check")
local cinema = require("lib.cinema")

check.within(3, "the sage cinematic plays", function() return cinema.state.current == "cinematics.sage" end)
local sage = entity("sage")
local at = sage:position()
check.within(15, "Bram walks over", function()
  if game_state().dialogue then tap("space") end       -- read his first line
  return check.dist(at, sage:position()) > 2
end)
tap("escape")
check.within(1, "the cinematic is skipped", function() return cinema.state.current == nil end)
wait(0.1)
local stopped = sage:position()
wait(0.5)
check.expect(check.dist(stopped, sage:position()) < 0.01,
  "Bram stopped walking when the cinematic was skipped (moved " .. check.dist(stopped, sage:position()) .. ")")
