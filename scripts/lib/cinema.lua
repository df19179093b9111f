-- Playing cinematics: one at a time, in the cutscenes group, skippable
-- with Escape. A cinematic is a module whose M.start(scene) is written
-- straight through; scene.hero, scene.marks and whatever the caller put in
-- the scene table are its cast. The cast's brains hold for the scene: an
-- entity of the scene table, or one the cinematic moves, turns or makes
-- speak, has its group paused until the scene ends, however it ends.
local M = {}

local S = persist("cinema", {
  current = nil,   -- name of the cinematic playing, or nil
  last = nil,      -- { name =, status = } of the last one to end
  played = {},     -- name -> times played
})
S.finished = S.finished or signal("cinematic finished")
M.state = S

local Scene = {}
Scene.__index = Scene

-- Locks the player's input for the cinematic. Close it with
--   local _ <close> = scene:lock_input()
-- When it closes (the end, or a skip) the speech is cleared, the screen
-- fades back in, the zoom goes back to 1, the camera returns to the hero and the actors stop (the
-- scene's, and every entity the cinematic itself set walking).
function Scene:lock_input()
  local unlock = lock_input()
  return finally(function()
    local _ <close> = unlock
    clear_speech()
    fade(0, 0)
    zoom_camera(1, 0)
    for _, actor in ipairs(self.actors) do
      if actor:alive() then actor:stop() end
    end
    stop_walks()       -- and whoever the scene fetched itself and set walking
    if self.hero:alive() then follow_camera(self.hero) end
  end)
end

local function is_entity(v)
  return type(v) == "table" and v.id ~= nil and v.kind ~= nil and v.group ~= nil
end

-- Builds the scene table a cinematic receives.
function M.scene(fields)
  local scene = setmetatable(fields or {}, Scene)
  scene.hero = scene.hero or player()
  scene.marks = scene.marks or marks()
  scene.actors = {}
  for _, v in pairs(scene) do
    if is_entity(v) then scene.actors[#scene.actors + 1] = v end
  end
  return scene
end

-- The scene lets an actor go its own way before it ends (its brain, and
-- whatever the scene spawned into its group, run again now).
function Scene:release(actor)
  release_cast(actor)
end

function M.busy()
  return S.current ~= nil
end

-- Plays cinematic module `name` and waits for it to end. Escape cancels it
-- (its <close> cleanups put the world right). Returns "done", "cancelled"
-- or "failed". Waits first if another cinematic is playing. However it
-- ends (done, skipped, failed, or the caller cancelled: a reset), the
-- scene is over: a later save of its module does not start it again.
function M.play(name, fields)
  while S.current do wait(S.finished) end
  local scene = M.scene(fields)
  for _, actor in ipairs(scene.actors) do
    if actor:alive() then cast(actor) end
  end
  -- a group named after the cinematic inside cutscenes: a report of its
  -- names it ("cinematics.vault: scripts/cinematics/vault.lua:12: ...")
  local stage = group { name = name, parent = groups.cutscenes }
  local ok, t = pcall(stage.start, stage, name, scene)
  if not ok then         -- the module did not load: report it, play on
    release_cast()
    stage:spawn(error, t, 0)
    S.last = { name = name, status = "failed" }
    return "failed"
  end
  S.current = name
  local skipped = false
  local function skip_it() skipped = true t:cancel() end
  S.skip = skip_it
  local skip = key_pressed("escape"):connect(skip_it)
  local own = t.group            -- the cinematic's own group inside cutscenes
  local _ <close> = finally(function()
    skip:disconnect()
    if S.skip == skip_it then S.skip, S.current = nil, nil end
    stage:cancel()               -- over: no save restarts it, nothing it left runs on
    release_cast()               -- the cast's brains go on
  end)
  while true do
    pcall(wait, t)               -- a failure is reported by weft already
    -- A save of a module without reload = "keep" cancels the cinematic and
    -- starts it again, with the same scene, in the same group: play on.
    local again = not skipped and t.status == "cancelled" and own.alive and own:tasks()[1]
    if not again then break end
    t = again
  end
  S.skip, S.current = nil, nil
  S.played[name] = (S.played[name] or 0) + 1
  S.last = { name = name, status = t.status }
  S.finished:fire(name, t.status)
  return t.status
end

-- A new game (the boot script, also after a soft reset): no cinematic
-- playing, none played.
function M.new_game()
  S.current, S.skip, S.last, S.played = nil, nil, nil, {}
end

-- Skips the cinematic playing, as Escape does.
function M.skip()
  if S.skip then S.skip() end
end

-- Plays a cinematic on demand (weft-demo --play, the console's play):
-- the world is first put in the state real play has when the scene plays
-- (`from`, else the cinematic's own M.from: a function of lib/states.lua);
-- when a zone of the level names it, Wren is put inside that zone and the
-- scene gets the zone, as walking in would give. Waits until it ends;
-- returns what play returns.
function M.play_now(name, from)
  local ok, C = pcall(require, name)
  from = from or (ok and type(C) == "table" and C.from) or nil
  if from then
    local setup = require("lib.states")[from]
    if type(setup) ~= "function" then error("no world state '" .. tostring(from) .. "' in lib/states.lua", 2) end
    setup()
  end
  local fields = {}
  for _, z in ipairs(zones()) do
    if z.cinematic == name then
      fields.zone = z
      player():teleport(tile(math.floor(z.x + z.w / 2), math.floor(z.y + z.h / 2)))
      pan_camera(player(), 0)
    end
  end
  return M.play(name, fields)
end

-- A guard caught the hero: play "caught" unless a cinematic is on.
function M.catch(guard)
  if M.busy() then return end
  M.play("cinematics.caught", { guard = guard })
end

return M
