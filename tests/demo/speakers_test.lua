-- Dialogue names and portraits belong to each entity (its state table's
-- title and portrait), so two guards need not both be "Guard" with one
-- face; spawn_entity takes a facing by name as e:face and the level do.
local check = require("lib.check")

check.skip_intro()
local holt = spawn_entity("guard", tile(30, 31), "holt", "right")
local piet = spawn_entity("guard", tile(31, 31), "piet", "up")
check.expect(holt:facing() == 0 and piet:facing() == 270,
  "spawn_entity faces \"right\" and \"up\" (" .. holt:facing() .. ", " .. piet:facing() .. ")")
holt.title = "Sergeant Holt"
holt.portrait = { "captain", tint = { 1, 0.5, 0.5 } }

local function line(who, text)
  local shown
  wait(groups.cutscenes:spawn(function()
    local f = who:say(text, math.huge)
    wait()
    shown = game_state().dialogue
    clear_speech()
    wait(f)
  end))
  return shown
end

local a = line(holt, "Halt!")
check.expect(a and a.speaker == "Sergeant Holt", "the box names Sergeant Holt (" .. tostring(a and a.speaker) .. ")")
check.expect(a.portrait == "captain" and a.tint[2] < 0.6, "with the face he was given")
local b = line(piet, "Who goes there?")
check.expect(b.speaker == "Guard" and b.portrait == "guard" and b.tint[1] == 1,
  "the other guard keeps the kind's name and face (" .. b.speaker .. ", " .. b.portrait .. ")")
piet.title = "Piet"
check.expect(line(piet, "Oh.").speaker == "Piet", "a title set later is used from the next line")
holt.title = nil
check.expect(line(holt, "As you were.").speaker == "Guard", "without a title, the kind's name again")
destroy(holt)
destroy(piet)
