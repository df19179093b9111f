-- Backspace in a real window (tests/demo/save.sh, under Xvfb): Escape
-- skips the intro, Wren walks into the keep for six seconds while F12
-- takes a picture every second, then Backspace goes back 5 s. The
-- script is in the saves too: after the rewind it wakes where it was 5 s
-- before, and game_state().save says the rewind happened. It then takes
-- the pictures of the same frames again (F12 names them -2), which
-- save.sh compares with the first ones. Every line printed is kept:
-- P lines say where Wren stands each frame, in both timelines.
local WALK = 300   -- the frame the walk starts at (after the intro is skipped)
local BACK = WALK + 380

local function rewound()
  local s = game_state().save
  return s and s.what == "rewind" and s.ok and s
end

wait_until(function() return frame() >= 60 end)
if not rewound() then tap("escape") end -- the intro; a rewind never reaches back here
wait_until(function() return frame() >= WALK end)
hold("w", 6)
while frame() < BACK do
  wait()
  local p = player():position()
  print(string.format("P %d %.3f %.3f", frame(), p.x, p.y))
  local r = rewound()
  if frame() % 60 == 1 or (r and frame() == r.frame + 1) then tap("f12") end
  -- a picture with the frame graph (F2), where each save into the ring
  -- is a spike once a second; its bars are this run's timings
  if frame() == BACK - 15 or frame() == BACK - 5 then tap("f2") end
  if frame() == BACK - 10 then tap("f12") end
end
local r = rewound()
if not r then
  local ring = game_state().rewind
  print(string.format("RING %d saves %d bytes %.2f ms max %.2f ms", ring.saves, ring.bytes, ring.ms, ring.max_ms))
  tap("backspace")
  wait()
  -- reached only when Backspace did not go back to a save made before this wait
  error("Backspace did not go back: " .. tostring(game_state().save.why))
end
print(string.format("REWOUND from %d to %d in %.1f ms", BACK, r.frame, r.ms))
