-- The line of key hints names every key a player needs, quitting too,
-- and fits the screen.
local check = require("lib.check")

check.skip_intro()
wait(1)                                  -- the letterbox goes
local keys = game_state().keys
for _, k in ipairs { "Esc", "` console", "P pause", "T slow", "F1", "F2", "F4", "F11", "F12", "Ctrl-R reset", "Ctrl-Q quit" } do
  check.expect(keys:find(k, 1, true), "the hints name " .. k .. ": " .. keys)
end
local r = overlay_rects().keys
check.expect(r and r.x >= 0 and r.x + r.w <= 1280 - 8, "the hints fit the screen")
