---@meta moonwatch
-- The game's verbs for editors: Moonwatch Keep's script API as the demo
-- (demo/verbs.c, control.c, assets.c) registers it, beside weft's own in
-- bindings/weft.d.lua. Put both folders in your Lua language server's
-- workspace library (see docs/designers.md); tests/demo/run.sh checks that
-- every function the demo registers is declared here.

---A position in world units (a tile is 16).
---@class Point
---@field x number
---@field y number

---An entity, a mark's name, an entity's name, or a position.
---@alias Place Point|Entity|string

---An entity's state table: kept for its whole life, across reloads. Put
---anything a behaviour wants to remember in it.
---@class Entity
---@field id integer
---@field name string
---@field kind "hero"|"guard"|"captain"|"sage"
---@field brain string|nil the module of its behaviour ("ai.patrol")
---@field waypoints Point[]|nil its patrol route
---@field group weft.Group its group: destroying the entity cancels it
---@field saw_player weft.Signal set while its lantern falls on the player
---@field title string|nil its name in a dialogue box (default: its kind's)
---@field portrait string|table|nil a kind's face, or { kind, tint = { r, g, b } }
local Entity = {}

---Walks there around walls.
---@param place Place
---@param speed? number units per second (40)
---@return weft.Future f "arrived", "interrupted" or "blocked"
function Entity:move_to(place, speed) end
---Stops walking.
function Entity:stop() end
---Turns to an angle, "right"/"down"/"left"/"up", an entity or a place.
---@param target number|string|Place
---@return weft.Future f "done"
function Entity:face(target) end
---A dialogue box in a cinematic, a balloon elsewhere.
---@param text string
---@param seconds? number a reading time when absent; math.huge waits for the key
---@return weft.Future f "key", "timeout", "interrupted" or "skipped"
function Entity:say(text, seconds) end
---@param name "wave"|"jump"|"shake"|"spin"|"nod"|"sleep"|"none"
---@param seconds? number
---@return weft.Future f "done" or "interrupted"
function Entity:play_anim(name, seconds) end
---@param target Place
---@return boolean
function Entity:can_see(target) end
---@param target Place
---@return number units
function Entity:distance(target) end
---@return Point
function Entity:position() end
---Puts it there at once.
---@param place Place
function Entity:teleport(place) end
---Sets ("calm", "suspicious", "alert") or reads the mood.
---@param name? "calm"|"suspicious"|"alert"
---@return string|nil
function Entity:mood(name) end
---Removes it: its pending futures fail, its group's scripts are cancelled.
function Entity:destroy() end
---@return boolean
function Entity:alive() end
---@return number degrees, 0 right, 90 down
function Entity:facing() end
---Reads, or sets when given, how opaque it is drawn.
---@param a? number 0 invisible .. 1 opaque
---@return number
function Entity:alpha(a) end

---@class Zone
---@field name string
---@field x integer
---@field y integer
---@field w integer
---@field h integer
---@field cinematic string|nil
---@field entered weft.Signal fired when the player walks in
---@field left weft.Signal fired when the player walks out

-- Entities --------------------------------------------------------------

---@return Entity
function player() end
---@param name string
---@return Entity|nil
function entity(name) end
---@param kind? string
---@return Entity[]
function entities(kind) end
---@param kind "hero"|"guard"|"captain"|"sage"
---@param place Place
---@param name? string
---@param facing? number|"right"|"down"|"left"|"up"
---@return Entity
function spawn_entity(kind, place, name, facing) end
---@param e Entity
function destroy(e) end
---Stops every walk a script of the caller's group started.
function stop_walks() end
---@param e Entity
---@param text string
---@param seconds? number
---@return weft.Future
function say(e, text, seconds) end
---@param e Entity
---@param place Place
---@param speed? number
---@return weft.Future
function move_to(e, place, speed) end
---@param e Entity
---@param target number|string|Place
---@return weft.Future
function face(e, target) end
---@param e Entity
---@param name string
---@param seconds? number
---@return weft.Future
function play_anim(e, name, seconds) end
---@param e Entity
---@param target Place
---@return boolean
function can_see(e, target) end
---@param e Entity
---@param target Place
---@return number
function distance(e, target) end
---@param e Entity
---@return Point
function position(e) end

-- The level -------------------------------------------------------------

---@param name string
---@return Point|nil
function mark(name) end
---@return table<string, Point>
function marks() end
---The centre of a tile.
---@param x number
---@param y number
---@return Point
function tile(x, y) end
---@param name string
---@return Zone|nil
function zone(name) end
---@return Zone[]
function zones() end
---@param name string
---@return boolean
function in_zone(name) end
---@param name string
---@return weft.Future f "open"
function open_door(name) end
---@param name string
---@return weft.Future f "closed"
function close_door(name) end
---@param name string
---@return boolean
function door_open(name) end
---Changes a cell of the map.
---@param x integer
---@param y integer
---@param char string one tile character (not a door)
function set_tile(x, y, char) end
---Builds the world from a level load_level gave (the boot script's).
---@param level table
function build_level(level) end
---@param file string under assets/
---@return weft.Future f an image {name, w, h}
function load_image(file) end
---@param file string under assets/
---@return weft.Future f a level for build_level
function load_level(file) end

-- Camera and screen -----------------------------------------------------

---@param target Place
---@param seconds? number
---@return weft.Future f "done"
function pan_camera(target, seconds) end
---@param e Entity
function follow_camera(e) end
---@param amount? number
---@param seconds? number
function shake_camera(amount, seconds) end
---Zooms the camera in: 1 the usual view, 2 twice as big (up to 4).
---@param zoom number
---@param seconds? number
---@return weft.Future f "done"
function zoom_camera(zoom, seconds) end
---@param alpha number 0 clear .. 1 black
---@param seconds? number
---@return weft.Future f "done"
function fade(alpha, seconds) end
---@param seconds? number
---@return weft.Future
function fade_in(seconds) end
---@param seconds? number
---@return weft.Future
function fade_out(seconds) end
---@param r number|"night"|"dawn"|"day"
---@param g? number
---@param b? number
---@param seconds? number
---@return weft.Future f "done"
function ambient(r, g, b, seconds) end
---@param title string
---@param subtitle? string
---@param seconds? number
---@return weft.Future f "done"
function banner(title, subtitle, seconds) end
---@param text string
function objective(text) end
---Closes the dialogue box and every balloon.
function clear_speech() end
---@param fraction number|false
---@param label? string
function loading(fraction, label) end

-- Input -----------------------------------------------------------------

---The player cannot move until the value is closed.
---@return any closer use as `local _ <close> = lock_input()`
function lock_input() end
---@return boolean
function input_locked() end
---@param name string an SDL key name: "escape", "e", "f5"
---@return weft.Signal
function key_pressed(name) end

-- The game --------------------------------------------------------------

---@return { paused: boolean, time_scale: number, fade: number, zoom: number, camera: Point, following: Entity|nil, input_lock: integer, frame: integer, headless: boolean, ambient: number, light: number[], keys: string, beat: string, fast_forward: boolean, boot: "ok"|"failed", resets: integer, dialogue: { speaker: string, text: string, portrait: string, tint: number[] }|nil, save: { what: "save"|"load"|"rewind", ok: boolean, frame: integer, bytes: integer, ms: number, why: string }|nil, rewind: { saves: integer, bytes: integer, ms: number, max_ms: number, why: string } }
function game_state() end
---The game's groups: game (P and T) > world (entities), cutscenes.
---@type { game: weft.Group, world: weft.Group, cutscenes: weft.Group }
groups = {}
---The command line the boot script follows: launch.play is --play's module,
---launch.from --from's world state.
---@type { play: string|nil, from: string|nil }
launch = {}
---Casts an entity in the cinematic playing: its group (its brain, its
---helpers) is paused until release_cast(). cinema.play casts the scene's
---actors; a cinematic's verbs on an entity cast it.
---@param e Entity
function cast(e) end
---With e: e's group runs again and the scene leaves it alone (scene:release);
---without: every entity cast goes back to its scripts (the scene ended).
---@param e? Entity
function release_cast(e) end
---A soft reset at the next frame (as Ctrl-R): what the game runs is
---cancelled, the level is built anew and scripts/main.lua runs again on
---the scripts as they are now; with a beat, unseen up to that beat.
---@param beat? string
---@return string what the console prints
function reset(beat) end

-- Test scripts (tests/demo/) --------------------------------------------

---@param key string
function tap(key) end
---@param key string
---@param seconds? number
---@return weft.Future
function hold(key, seconds) end
---@param key string
function key_down(key) end
---@param key string
function key_up(key) end
---The panel's reports, oldest first; with warnings true, its warnings too.
---@param warnings? boolean
---@return { message: string, trace: string, repeats: integer, who: string|nil, module: string|nil, warning: "slow"|"pile-up"|"save"|"load"|nil }[]
function errors(warnings) end
---@param name "errors"|"tasks"|"graph"|"paused"|"loading"|"dialogue"|"letterbox"
---@return boolean
function overlay_shown(name) end
---@return table<string, { x: integer, y: integer, w: integer, h: integer }>
function overlay_rects() end
---@param file string a .png
function screenshot(file) end
---Draws the frame and gives the task inspector's lines as shown.
---@param name "tasks"
---@return string[]
function overlay_text(name) end
---Marks a beat of a cinematic: weft-demo --play MODULE --beat NAME runs
---the game unseen up to it.
---@param name? string
function beat(name) end
---Types text into the console (open it with tap("`")).
---@param text string
function console_input(text) end
---The console's output lines, oldest first.
---@return string[]
function console_lines() end
---From now on the game runs unseen, as fast as it goes, until beat(name).
---@param name string
function run_to_beat(name) end
