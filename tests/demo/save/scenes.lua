-- F9 then F10 in every scene of the game (tests/demo/save.sh): the
-- loading screen, the title, the intro's walks and lines, play, a chase,
-- the "caught" cinematic, a console line that waits. Each save is loaded
-- back into this process at once; the game must go on from it without a
-- script error. A save that cannot be made must say why in the panel
-- (errors(true): a "save" warning) and the game go on as it was.
-- With --play MODULE, the scenes are that cinematic's (save.sh plays
-- vault, sage and ending so).
local cinematic = launch.play

-- The script itself is in every save: after a load it wakes where it was
-- when F9 was pressed, and game_state().save (the demo's, not the
-- scripts') says the load happened.
local function save_and_load(scene, settle)
  local before = #errors()
  tap("f9")
  wait()
  local s = game_state().save
  if s.what == "save" and s.ok then
    tap("f10")
    wait()
    -- reached only when F10 did not load the save made before this wait
    error(scene .. ": F10 did not load the save: " .. tostring(game_state().save.why))
  elseif s.what == "save" then
    local shown = false
    for _, e in ipairs(errors(true)) do
      if e.warning == "save" and e.message:find(s.why, 1, true) then shown = true end
    end
    print("SCENE", scene, "not saved:", s.why, shown and "(shown)" or "(NOT SHOWN)")
    assert(shown, "a save that failed is said in the panel")
  else
    assert(s.what == "load" and s.ok, "loaded: " .. tostring(s.why))
    print("SCENE", scene, "saved and loaded at frame", s.frame, s.bytes .. " bytes", string.format("%.1f ms", s.ms))
  end
  wait_frames(settle or 30)  -- the loaded game goes on
  assert(#errors() == before, "no script error after the load: " .. tostring((errors()[#errors()] or {}).message))
end

local function until_frame(n) wait_until(function() return frame() >= n end) end

if cinematic then
  wait_until(function() return game_state().beat ~= "" or input_locked() end)
  until_frame(frame() + 60)
  save_and_load(cinematic .. " starts")
  until_frame(frame() + 240)
  save_and_load(cinematic .. " later")
  wait_until(function() return not input_locked() end)
  save_and_load("play after " .. cinematic)
  return
end

until_frame(1)
save_and_load("loading screen (the loads asked for)", 1)
save_and_load("loading screen (the loads under way)", 1)
until_frame(12)
assert(overlay_shown("loading"), "the loading screen shows")
save_and_load("loading screen (the bar full)")
until_frame(200)
save_and_load("title")
until_frame(880)
save_and_load("intro: two walks to their marks")
until_frame(1000)
save_and_load("intro: the captain's line")
until_frame(2000)
save_and_load("play")
hold("w", 2.5)
until_frame(2830)
save_and_load("a guard's chase")
until_frame(2950)
save_and_load("caught")
wait_until(function() return not input_locked() end)
tap("`")
wait()
console_input("wait(5) print('the console line ended')")
tap("return")
wait()
tap("`")
wait()
save_and_load("a console line waiting")
