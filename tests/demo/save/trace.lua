-- A line a frame of what the game shows, from the intro's last line into
-- play until a guard catches Wren, for comparing runs (tests/demo/save.sh):
-- the camera, fade and zoom, the input lock, the dialogue box, and every
-- entity (where it stands and faces, its mood, its patrol leg). F9 at
-- frame SAVE_AT saves the game: at 1700 Wren says "He left the gate
-- open." while the captain walks to bed; at 2830 the gate guard chases
-- her. F12 takes pictures (drawn between two frames: nothing the scripts
-- see changes). With LOAD_AT, F10 at that frame loads the save back into
-- this process, once.
local SAVE_AT = 1700  -- save.sh sets 2830, or 0 for a run that never saves
local LOAD_AT = 0     -- save.sh sets a frame for a quickload in the same process
local LAST = 3100
local SHOTS = { [1720] = true, [1850] = true, [2300] = true, [2860] = true, [3050] = true }

local function f3(v) return string.format("%.3f", v) end

local function line()
  local s = game_state()
  local out = { "T", frame(), f3(s.camera.x), f3(s.camera.y), f3(s.fade), f3(s.zoom),
                s.input_lock }
  if s.dialogue then out[#out + 1] = s.dialogue.speaker .. "|" .. s.dialogue.text end
  for _, e in ipairs(entities()) do
    local p = e:position()
    out[#out + 1] = string.format("%s@%s,%s/%s:%s:%s", e.name, f3(p.x), f3(p.y), f3(e:facing()),
                                  e:mood(), tostring(e.leg))
  end
  return table.concat(out, " ")
end

while frame() < LAST do
  wait()
  print(line())
  if SHOTS[frame()] then tap("f12") end
  if frame() == 1900 then hold("w", 2.5) end  -- into the keep, where the gate guard comes by
  if frame() == SAVE_AT then tap("f9") end
  local last = game_state().save
  if frame() == LOAD_AT and not (last and last.what == "load") then tap("f10") end
end
local last = game_state().save
print("SAVE", last and last.what, last and last.ok, last and last.frame, last and last.why)
