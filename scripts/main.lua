-- The boot script of Moonwatch Keep. The game (C) runs it as a task when it
-- starts: it loads the art and the level behind the loading screen, starts
-- every entity's behaviour, wires the zones, plays the intro, then hands
-- the keep to the player. It runs again, on the scripts as they are
-- then, after a soft reset (Ctrl-R, reset() in the console).
current().name = "boot"
local game = require("lib.game")
local cinema = require("lib.cinema")
game.new_game()
cinema.new_game()

-- 1. Loading. Every file is a future from the job pool; the bar follows
--    them as they finish.
local files = {
  { load_image, "tiles.png" },
  { load_image, "characters.png" },
  { load_level, "castle.level" },
}
local loads, done = {}, 0
loading(0, "decoding images")
for i, file in ipairs(files) do
  local load, name = file[1], file[2]
  loads[i] = load(name)
  loads[i]:on_done(function()
    done = done + 1
    loading(done / #files, "loaded " .. name)
  end)
end
local results = wait(all(loads))
build_level(results[3])
wait(0.5)                       -- let the bar show its end
loading(false)
ambient("night")

-- 2. Behaviours: an entity with a brain runs that module in its own group,
--    so destroying the entity stops its scripts.
for _, e in ipairs(entities()) do
  if e.brain then
    local ok, err = pcall(e.group.start, e.group, e.brain, e)
    -- a brain that fails to load: reported in its entity's name (the red
    -- marker over it), the rest go on, and the save that fixes it starts it
    if not ok then e.group:spawn(error, err, 0) end
  end
end
game.state.checkpoint = mark("hero_gate")   -- caught: back outside the gate
game.state.phase = "intro"
game.ready:set()

-- 3. Zones: a zone with a cinematic plays it the first time the player
--    walks in.
for _, z in ipairs(zones()) do
  if z.cinematic then
    local t = spawn(function()
      wait(game.playing)
      wait(z.entered)
      -- not when --play or a console's play() showed it already (and put
      -- Wren in the zone to do so)
      if cinema.state.current ~= z.cinematic and not cinema.state.played[z.cinematic] then
        cinema.play(z.cinematic, { zone = z })
      end
    end)
    t.name = "zone " .. z.name
  end
end
spawn(function()
  wait(game.playing)
  wait(zone("hall").entered)
  objective("The vault is behind the great door in the north wall. Mind the sentry.")
end).name = "zone hall"

-- 4. The intro, then the player has the keep. With weft-demo --play
--    MODULE the intro is skipped and that cinematic plays first.
if launch.play then
  local intro = spawn(cinema.play, "cinematics.intro")
  cinema.skip()                 -- its cleanup puts everyone where the game starts
  wait(intro)
  cinema.play_now(launch.play, launch.from)
  beat()                        -- its end: --beat stops running unseen here at the latest
else
  cinema.play("cinematics.intro")
  beat()                        -- reset(beat) runs unseen no further than here
end
game.state.phase = "play"
objective("Steal the Moon Idol from the vault, north of the great hall. Stay out of the lantern light.")
game.playing:set()
