---@meta _
-- weft script API: definitions for lua-language-server (LuaCATS annotations).
-- Editor support only: the host never loads this file. The contract is
-- shared/DESIGN.md, "The script API"; keep the two in step.
--
-- Every script runs inside a task; the host resumes tasks once a frame.
-- Calls marked `async` wait: they suspend the calling task and resume it on
-- a later frame. They work only inside a task, and not inside a metamethod
-- or a callback called from C (a table.sort comparator, say).
--
-- The sandbox: scripts get a reduced standard library.
--   * os offers only os.clock, os.time and os.date;
--   * io writes to the host log and report sinks and reads files under the
--     scripts and assets roots (symbolic links followed, never out of a
--     root); it writes no file (io.open in a writing mode returns nil,
--     message, errno) and runs no program;
--   * no string.dump; debug offers traceback, getinfo and getmetatable;
--   * load, loadfile and dofile compile text only (binary chunks are
--     refused); loadfile and dofile read under the scripts root;
--   * require searches the caller's package.path (default name.lua and
--     name/init.lua under the scripts root), finding files under the
--     scripts root only; package is a view (loaded, preload, config, path,
--     searchers); package.loaded holds the standard libraries;
--   * __gc finalizers run as tasks at the next frame's start;
--   * print writes to the host log (`weft run` sends it to stdout); warn,
--     off until warn("@on"), to the host's logger (`weft run`: stderr).
-- The project's .luarc.json turns off lua-language-server's io, os, debug
-- and package libraries, so only what the sandbox offers is completed; the
-- parts that remain are declared at the end of this file.

-- ---------------------------------------------------------------------------
-- Shared types
-- ---------------------------------------------------------------------------

---One thing `wait` can wait on: a number of seconds, a future, a signal or a
---task.
---@alias weft.Awaitable number|weft.Future|weft.Signal|weft.Task

---What `wait(x)` accepts: nothing (the next frame), one awaitable, or a list
---of awaitables (waits for all of them; a number in a list is a timer).
---@alias weft.Waitable weft.Awaitable|weft.Awaitable[]|nil

---A task's state, read from `t.status`.
---@alias weft.TaskStatus
---| "running"   # it is executing right now (only ever the task that asks)
---| "waiting"   # suspended in a wait, or woken and not yet resumed
---| "done"      # its function returned
---| "failed"    # it raised an error (see `t.error`)
---| "cancelled" # it was cancelled, directly or through its parent or group

---A future's state, read from `f.state`.
---@alias weft.FutureState
---| "pending"   # not completed yet
---| "resolved"  # completed with values (`f:resolve(...)`)
---| "failed"    # completed with an error (`f:fail(err)`)
---| "cancelled" # completed by `f:cancel()`

---Job kinds built into weft. The game (C code) can register more, so any
---string is accepted.
---@alias weft.JobKind
---| "read_file" # read a file under assets/; resolves to its contents (a string)
---| "find_path" # grid path search; resolves to a list of {x =, y =} points, or nil
---| string

-- ---------------------------------------------------------------------------
-- Waiting
-- ---------------------------------------------------------------------------

---Suspend this task until `x` is ready and return what `x` produced.
---
---* nothing, or a number <= 0: the next frame; returns the elapsed game seconds.
---* a number `s`: `s` seconds of game time (this task's group clock); returns the elapsed game seconds.
---* a future: its values; raises its error if it failed.
---* a signal: the values of its next `fire` (at once if it is `set`).
---* a task: its return values; raises its error if it failed or was cancelled.
---* a list: waits for all elements; one value per element, in order.
---
---Waiting on something already finished returns at once, without yielding.
---`wait(math.huge)` sleeps until the task is cancelled; NaN, strings and
---other values raise an error. `coroutine.yield(x)` in a task is the same call.
---
---```lua
---wait(1.5)                                       -- look around
---wait{hero:move_to(gate), guard:move_to(post)}    -- both moves
---if wait(first{door_opened, 5}) == 2 then print("timed out") end
---```
---@async
---@overload async fun(): number
---@overload async fun(seconds: number): number
---@overload async fun(future: weft.Future): ...any
---@overload async fun(signal: weft.Signal): ...any
---@overload async fun(task: weft.Task): ...any
---@overload async fun(list: weft.Awaitable[]): ...any
---@param x? weft.Waitable what to wait for
---@return any ... elapsed seconds, or the values `x` produced
function wait(x) end

---Wait `n` frames (0 returns at once).
---
---```lua
---wait_frames(2)   -- let two frames render
---```
---@async
---@param n integer whole number of frames, >= 0
function wait_frames(n) end

---Wait until `pred()` returns a truthy value (checked now, then once a
---frame), and return that value.
---
---```lua
---local target = wait_until(function() return e:nearest_enemy() end)
---```
---@async
---@generic T
---@param pred fun(): T
---@return T value the truthy value pred returned
function wait_until(pred) end

---Wait while `pred()` returns a truthy value (checked now, then once a frame).
---
---```lua
---wait_while(function() return door:is_moving() end)
---```
---@async
---@param pred fun(): any
function wait_while(pred) end

---Wait `s` seconds of real time, ignoring time scale and pause (menus,
---UI fades while the game is paused).
---@async
---@param s number seconds of real time
---@return number elapsed real seconds
function wait_realtime(s) end

---A future that completes with the first element of `list` to finish,
---resolving to `index, values...` (a number in the list is a timer). If the
---first to finish failed, it fails with that error. The other elements are
---left alone: nothing is cancelled.
---
---```lua
---local i = wait(first{arrived, e.saw_player})   -- 1: arrived, 2: saw the player
---if wait(first{door_opened, 5}) == 2 then ... end -- 2 means 5 s passed first
---```
---@param list weft.Awaitable[]
---@return weft.Future future resolves to `index, values...`
---@nodiscard
function first(list) end

---A future that resolves when every element of `list` is done, to one table
---`{v1, ..., vn}` (vi is element i's first value; a nil stays a hole), or
---fails with the first failure. `all{}` resolves at once to `{}`.
---
---```lua
---local r = wait(all{job("read_file", a), job("read_file", b)})
---print(#r[1], #r[2])
---```
---@param list weft.Awaitable[]
---@return weft.Future future resolves to `{v1, ..., vn}`
---@nodiscard
function all(list) end

---A future that completes like `x`, or fails with `weft.TIMEOUT` if `x` is
---not done within `s` seconds.
---
---```lua
---local ok, err = pcall(wait, timeout(e:move_to(door), 3))
---if not ok and err == weft.TIMEOUT then e:say("Stuck!") end
---```
---@param x weft.Waitable what to wait for
---@param s number seconds of game time
---@return weft.Future
---@nodiscard
function timeout(x, s) end

-- ---------------------------------------------------------------------------
-- Tasks
-- ---------------------------------------------------------------------------

---A running script: a coroutine the host resumes once a frame. Handles
---compare with `==` (`current() == t`). Wait on a task with `wait(t)`.
---@class weft.Task
---@field status weft.TaskStatus what the task is doing now (read-only)
---@field name string a label for logs and `weft.tasks()`; defaults to its spawn site "file:line"; settable
---@field group weft.Group|nil the group that owns it; nil once the task has finished (read-only)
---@field error any the value it raised if it failed, or the cancellation error if it was cancelled; nil otherwise (read-only)
local Task = {}

---Stop the task where it waits. When this returns, the task and its
---children are "cancelled" and their `<close>` cleanups have run (children
---first). Its waiters get an error that `weft.is_cancelled` recognises.
---Cancelling a finished task does nothing.
---
---```lua
---local clock = every(0.25, tick)
---wait(1)
---clock:cancel()
---```
function Task:cancel() end

---Start `fn(...)` as a new task and run it at once up to its first wait.
---The new task is a child of the caller: cancelled if the caller fails or is
---cancelled, left running (in the caller's group) if the caller returns.
---
---```lua
---local walker = spawn(walk, "hero", 4, 0.5)
---local name = wait(walker)   -- its return values
---```
---@param fn async fun(...) the task body
---@param ... any arguments for fn
---@return weft.Task task
function spawn(fn, ...) end

---Like `spawn`, but the task starts on the next frame.
---@param fn async fun(...) the task body
---@param ... any arguments for fn
---@return weft.Task task
function defer(fn, ...) end

---Run `fn(...)` once, `s` seconds from now, as a task.
---
---```lua
---after(2, door.close, door)
---```
---@param s number seconds of game time
---@param fn async fun(...)
---@param ... any arguments for fn
---@return weft.Task task cancel it to call the run off
function after(s, fn, ...) end

---Run `fn(...)` every `s` seconds without drift: the k-th run is at
---start + k*s, at most one run per frame. Runs until cancelled.
---
---```lua
---local blink = every(0.5, function() lamp:toggle() end)
---```
---@param s number period in seconds of game time, > 0
---@param fn async fun(...)
---@param ... any arguments for fn
---@return weft.Task task cancel it to stop the runs
function every(s, fn, ...) end

---The running task (nil only outside any task).
---
---```lua
---current().name = "guard patrol"
---```
---@return weft.Task task
---@nodiscard
function current() end

-- ---------------------------------------------------------------------------
-- Cancellation and cleanup
-- ---------------------------------------------------------------------------

---A to-be-closed value made by `finally`; bind it with `<close>`.
---@class weft.Finally

---Cleanup that runs when the enclosing block ends: normally, on an error,
---or when the task is cancelled. `fn` runs protected: an error in it is
---reported like a task error and the other cleanups still run.
---
---```lua
---local _ <close> = finally(function() e:stop_anim() end)
---wait(e:play_anim("dance"))
---```
---@param fn fun() the cleanup
---@return weft.Finally closer bind it to a `<close>` local
---@nodiscard
function finally(fn) end

-- ---------------------------------------------------------------------------
-- Groups
-- ---------------------------------------------------------------------------

---A set of tasks with its own clock: pause, scale or cancel them together
---(game, UI, cutscene, one entity). Groups nest: a child's time scale
---multiplies its parent's, and pausing or cancelling a group reaches its
---subgroups.
---@class weft.Group
---@field time_scale number this group's own speed factor (finite, >= 0); settable
---@field paused boolean true while paused (read-only; use `pause`/`resume`)
---@field now number this group's clock, in game seconds (read-only)
---@field alive boolean false once the group is gone (never raises, unlike the other fields of a dead group)
---@field name string|nil a label for logs; settable
---@field parent weft.Group|nil the enclosing group; nil for the root (read-only)
---@field ms number script time of its tasks and inner groups' in the last whole frame, ended tasks too (read-only)
---@field avg_ms number the same on average, over about the last 30 frames (read-only)
---@field worst_ms number the same in the costliest frame (read-only)
local Group = {}

---Start `fn(...)` as a task owned by this group (not a child of the caller:
---cancelling the caller leaves it running).
---
---```lua
---enemy_group:spawn(flee, enemy)
---```
---@param fn async fun(...) the task body
---@param ... any arguments for fn
---@return weft.Task task
function Group:spawn(fn, ...) end

---Pause this group and its subgroups: their clocks stop and their sleeping
---tasks stay asleep.
function Group:pause() end

---Resume a paused group.
function Group:resume() end

---Cancel every task in this group and its subgroups.
function Group:cancel() end

---The live tasks of this group.
---@return weft.Task[] tasks
---@nodiscard
function Group:tasks() end

---Options for `group{...}`.
---@class weft.GroupOptions
---@field name? string a label for logs
---@field time_scale? number speed factor (default 1)
---@field parent? weft.Group enclosing group (default: the caller's group)

---Make a new group.
---
---```lua
---local cutscene = group{name = "intro", time_scale = 1}
---cutscene:spawn(intro.start, scene)
---cutscene.time_scale = 0.5   -- slow motion
---```
---@param opts? weft.GroupOptions
---@return weft.Group group
---@nodiscard
function group(opts) end

-- ---------------------------------------------------------------------------
-- Time
-- ---------------------------------------------------------------------------

---Read or set the global time scale (the root group's); returns the scale.
---
---```lua
---time_scale(0.25)            -- bullet time
---local s = time_scale()
---```
---@param s? number new scale, finite and >= 0; omit to read
---@return number scale the scale now in force
function time_scale(s) end

---Game time in seconds; every script sees the same value within one frame.
---@return number seconds
---@nodiscard
function now() end

---Real time in seconds, unaffected by time scale and pause.
---@return number seconds
---@nodiscard
function realtime() end

---The frame counter: 0 before the first step, k during step k.
---@return integer frame
---@nodiscard
function frame() end

-- ---------------------------------------------------------------------------
-- Futures
-- ---------------------------------------------------------------------------

---A value that arrives later. Long actions (`move_to`, `say`, `job`, ...)
---return one; wait for it with `wait(f)`. Completing a future twice raises
---an error.
---@class weft.Future
---@field state weft.FutureState pending, resolved, failed or cancelled (read-only)
---@field error any the failure or cancellation error once failed or cancelled; nil otherwise (read-only)
---@field name string|nil its label: given to `future(name)`, the verb that made it ("move_to"), "first", "all", "timeout" or "job KIND" (read-only)
local Future = {}

---Complete the future with values; its waiters get them.
---@param ... any the values
function Future:resolve(...) end

---Complete the future with an error; its waiters raise it.
---@param err any the error value (a message or any value)
function Future:fail(err) end

---Cancel the pending future; waiters get an error that `weft.is_cancelled`
---recognises. Does nothing if it is already done.
function Future:cancel() end

---True once the future is resolved, failed or cancelled.
---@return boolean
---@nodiscard
function Future:done() end

---The values of a resolved future; raises its error if it failed or was
---cancelled, and raises if it is still pending.
---@return any ...
function Future:result() end

---Call `fn(f)` as a task when the future completes (at once if it is
---already done, so no completion is missed).
---
---```lua
---f:on_done(function(f) if f.state == "failed" then print(f.error) end end)
---```
---@param fn async fun(f: weft.Future)
function Future:on_done(fn) end

---A new pending future for your own code to complete.
---
---```lua
---local answer = future()
---ui:ask("Open the gate?", function(yes) answer:resolve(yes) end)
---if wait(answer) then gate:open() end
---```
---@param name? string a label shown by `weft.tasks()` ("future door")
---@return weft.Future future
---@nodiscard
function future(name) end

-- ---------------------------------------------------------------------------
-- Signals
-- ---------------------------------------------------------------------------

---An event many tasks can wait on: `wait(s)` waits for the next `fire`.
---@class weft.Signal
---@field name string|nil the name given to `signal(name)` (read-only)
---@field is_set boolean true between `set` and `reset` (read-only)
local Signal = {}

---Wake every task waiting on the signal now, passing them the values.
---Later waits wait for the next fire.
---@param ... any values for the waiters
function Signal:fire(...) end

---Fire and stay set: waits return these values at once until `reset()`.
---@param ... any values for the waiters
function Signal:set(...) end

---Clear a `set`: waits wait for the next fire again.
function Signal:reset() end

---Run `fn(...)` as a new task on every fire, in the group of the task that
---connected, until that group is cancelled or the connection is disconnected.
---
---```lua
---local c = alarm:connect(function(where) e:move_to(where) end)
---c:disconnect()
---```
---@param fn async fun(...) receives the fired values
---@return weft.Connection connection
function Signal:connect(fn) end

---A link made by `Signal:connect`.
---@class weft.Connection
---@field connected boolean false after `disconnect()` (read-only)
local Connection = {}

---Stop running the function on fires.
function Connection:disconnect() end

---A new signal.
---
---```lua
---local door_opened = signal("door_opened")
---spawn(function() wait(door_opened); print("in!") end)
---door_opened:fire()
---```
---@param name? string shown in `weft.tasks()` ("signal door_opened")
---@return weft.Signal signal
---@nodiscard
function signal(name) end

-- ---------------------------------------------------------------------------
-- Channels
-- ---------------------------------------------------------------------------

---A queue between tasks. `#ch` is the number of values waiting in it.
---@class weft.Channel
---@operator len: integer
---@field closed boolean true once `close()` was called (read-only)
---@field capacity integer|nil the most values it buffers; nil when unbounded (read-only)
local Channel = {}

---Send a value, waiting while the channel is full. Raises if the channel is
---closed (also when it closes while this task waits). Send non-nil values:
---`recv` uses nil to say "closed".
---@async
---@param v any
function Channel:send(v) end

---Receive the next value, waiting while the channel is empty. Once it is
---closed and drained, returns `nil, "closed"`.
---
---```lua
---while true do
---  local order, closed = orders:recv()
---  if closed then break end
---  serve(order)
---end
---```
---@async
---@return any value
---@return "closed"|nil reason
function Channel:recv() end

---Send without waiting.
---@param v any
---@return boolean ok
---@return "full"|"closed"|nil reason why not, when ok is false
function Channel:try_send(v) end

---Receive without waiting.
---@return any value nil when nothing was received
---@return "empty"|"closed"|nil reason why not, when value is nil
function Channel:try_recv() end

---Close the channel: values already sent are still delivered; then `recv`
---returns `nil, "closed"` and `send` raises.
function Channel:close() end

---A new channel.
---
---```lua
---local orders = channel(4)   -- buffers 4 values; channel() is unbounded
---```
---@param capacity? integer most values buffered (>= 0); nil for unbounded
---@return weft.Channel channel
---@nodiscard
function channel(capacity) end

-- ---------------------------------------------------------------------------
-- Jobs
-- ---------------------------------------------------------------------------

---A grid cell on a path from `job("find_path", ...)`, 1-based.
---@class weft.Point
---@field x integer column: the character's position in its row string
---@field y integer row: the string's index in `rows`

---Run work on a worker thread; the future resolves on the main thread.
---No Lua runs off the main thread.
---
---* "read_file", path: the contents (a string) of a file; `path` is relative
---  to the assets directory, without "..". Fails if the file can't be read.
---* "find_path", rows, sx, sy, gx, gy: the shortest 4-way path on a grid
---  (`rows` is a list of strings, '#' marks a wall) from (sx, sy) to (gx, gy),
---  1-based, as a list of `{x =, y =}` points from start to goal inclusive,
---  or nil when the goal cannot be reached.
---
---```lua
---local text = wait(job("read_file", "levels/one.txt"))   -- assets/levels/one.txt
---local path = wait(job("find_path", {"....", ".##.", "...."}, 1, 1, 4, 3))
---if path then for _, p in ipairs(path) do print(p.x, p.y) end end
---```
---@overload fun(kind: "read_file", path: string): weft.Future
---@overload fun(kind: "find_path", rows: string[], sx: integer, sy: integer, gx: integer, gy: integer): weft.Future
---@nodiscard
---@param kind weft.JobKind
---@param ... any the job's arguments
---@return weft.Future future resolves to the job's result
function job(kind, ...) end

-- ---------------------------------------------------------------------------
-- Modules and hot reload
-- ---------------------------------------------------------------------------

---What a script module returns. Module tables keep their identity across
---reloads; runtime state belongs in the state table or in `persist`.
---To get completion for your own fields too, put the annotation
---`---@class ai.patrol: weft.Module` on the line above `local M = {}`:
---
---```lua
---local M = { reload = "keep" }   -- (the @class line goes above this one)
---M.SPEED = 60
---function M.start(e) ... end
---return M
---```
---@class weft.Module
---@field start? async fun(state: table, ...) the entry `weft.start` runs as a task; state is kept across reloads
---@field on_reload? async fun(state: table, old_version: integer) run instead of `start` when the module reloads
---@field reload? "keep" set to keep running tasks on the old code across a reload; only new starts get the new code

---One row of `weft.modules()`.
---@class weft.ModuleInfo
---@field name string module name, e.g. "ai.patrol"
---@field file string its file, e.g. "scripts/ai/patrol.lua"
---@field version integer 1 when first loaded, +1 on each reload
---@field tasks integer tasks started from it with `weft.start` / `g:start` that are running
---@field old integer of those, how many still run code from an older version (`reload = "keep"`)
---@field ms number script time of its starts (each start's own group, ended tasks too) in the last whole frame
---@field avg_ms number the same a frame on average (about the last 30 frames)
---@field error string|nil the error of its last failed reload, until it loads cleanly

---Load a module from the scripts root (once; later calls return the same
---table). Names are dotted (or slashed) paths: "ai.patrol" is
---scripts/ai/patrol.lua, or scripts/ai/patrol/init.lua.
---
---```lua
---local path = require "lib.path"
---```
---@param name string dotted module name
---@return any module what the file returned (true if it returned nothing)
---@return string? file the file it was loaded from, on the first load
function require(name) end

---A table that survives hot reloads: the first call for `key` stores and
---returns `init`, later calls (also after a reload) return that same table.
---
---```lua
---local stats = persist("arena.stats", { kills = 0 })
---stats.kills = stats.kills + 1
---```
---@generic T: table
---@param key string unique name for the table
---@param init T the table to keep if `key` is new
---@return T
function persist(key, init) end

-- ---------------------------------------------------------------------------
-- The weft table
-- ---------------------------------------------------------------------------

---One row of `weft.tasks()`: a snapshot of a live task.
---@class weft.TaskInfo
---@field id integer task number
---@field task weft.Task the handle
---@field name string its name (default: spawn site)
---@field group string|nil the name of its group
---@field status weft.TaskStatus
---@field waiting string what it waits on: "sleep 1.25 s left", "signal door_opened", "all 1/2"
---@field where string file:line where it is suspended
---@field spawned string file:line where it was spawned
---@field resumes integer how many times it was resumed
---@field who string? who reports name first: the task's script-given name, else its entity (the innermost named group weft.start did not make)

---@class weftlib
---@field CANCELLED userdata the error value of a cancellation (read-only, shared by every script); test with `weft.is_cancelled(err)`
---@field TIMEOUT userdata the error value of a `timeout(x, s)` that ran out (read-only, shared by every script); compare with `==`
---@field root weft.Group the root group; its time scale is `time_scale()`
weft = {}

---Start module `module_name`'s entry `M.start(state, ...)` as a task owned by
---the module; on reload the task is restarted with the same state table.
---
---```lua
---local t = weft.start("ai.patrol", guard_state)
---```
---@param module_name string dotted module name, e.g. "ai.patrol"
---@param state? table per-entity state, kept across reloads
---@param ... any more arguments for M.start
---@return weft.Task task
function weft.start(module_name, state, ...) end

---The loaded modules.
---@return weft.ModuleInfo[]
---@nodiscard
function weft.modules() end

---Files whose last save failed to load, with the error: shown until the file loads cleanly.
---@return {file: string, error: string}[]
---@nodiscard
function weft.reload_errors() end

---True if `err` is the error of a cancellation (a cancelled task or future).
---
---```lua
---local ok, err = pcall(wait, t)
---if not ok and not weft.is_cancelled(err) then error(err, 0) end
---```
---@param err any
---@return boolean
---@nodiscard
function weft.is_cancelled(err) end

---Handle task failures yourself: `fn(err, task, trace)` is called once for
---each failed task and each error raised by a cleanup. `err` is the value
---raised, `trace` the traceback followed by one "spawned at file:line" line
---per ancestor. Pass nil to restore the default (stderr).
---
---```lua
---weft.on_error(function(err, task, trace) overlay:show(task.name, trace) end)
---```
---@param fn fun(err: any, task: weft.Task, trace: string)|nil
function weft.on_error(fn) end

---A snapshot of every live task, for debug overlays; or, given a slice,
---only its rows (the costliest first with `by`), and how many tasks live.
---
---```lua
---for _, t in ipairs(weft.tasks()) do print(t.name, t.status, t.waiting, t.where) end
---local top, total = weft.tasks{by = "avg_ms", count = 3}
---```
---@param slice? {by?: "ms"|"avg_ms"|"worst_ms", first?: integer, count?: integer}
---@return weft.TaskInfo[] rows
---@return integer? total live tasks (with a slice)
---@nodiscard
function weft.tasks(slice) end

---The places tasks were spawned at that have live tasks, the most first
---(`count` of them, default 100), for an inspector that groups tasks by
---where they come from: `spawned` is the spawn's "file:line", `by` the
---spawner's own spawn site (nil at the top), `live` how many of its
---tasks live, `growing` true once a TASK_GROWTH warning named it (its
---live tasks grew by 100 or more over 10 s, in every 2 s of it).
---
---```lua
---for _, s in ipairs(weft.sites(5)) do print(s.live, s.spawned, s.growing) end
---```
---@param count? integer
---@return {spawned: string, by: string|nil, live: integer, growing: boolean}[]
---@nodiscard
function weft.sites(count) end

-- ---------------------------------------------------------------------------
-- Tests (only in *_test.lua files run by `weft test`)
-- ---------------------------------------------------------------------------

---Options for `test`.
---@class weft.TestOptions
---@field frames? integer fail if the case has not finished after this many frames (default 3600)

---Register a test case: `fn` runs as a task on its own virtual clock
---(dt = 1/60) and fails on an error or when it runs out of frames. Only in
---*_test.lua files run by `weft test`.
---
---```lua
---test("wait(0.5) resumes on frame 30", function()
---  wait(0.5)
---  assert(frame() == 30)
---end, { frames = 60 })
---```
---@param name string
---@param fn async fun()
---@param opts? weft.TestOptions
function test(name, fn, opts) end

---Under `weft test` only: makes `name` a global that every script this
---test file requires sees, so a module's call of a game function can be
---faked (`stub("player", function() return hero end)`).
---@param name string
---@param value any
function stub(name, value) end

-- ---------------------------------------------------------------------------
-- The sandboxed standard library (what remains of os and debug)
-- ---------------------------------------------------------------------------

---Date fields, as returned by `os.date("*t")` and taken by `os.time`.
---@class osdate
---@field year integer
---@field month integer
---@field day integer
---@field hour? integer
---@field min? integer
---@field sec? integer
---@field wday? integer
---@field yday? integer
---@field isdst? boolean

---The sandbox's os: only clock, time and date.
---@class weft.oslib
os = {}

---CPU time used by the program, in seconds.
---@return number
---@nodiscard
function os.clock() end

---The current time (no argument) or the time of a date table, as a number.
---@param date? osdate
---@return integer
---@nodiscard
function os.time(date) end

---Format a time as a string, or as a table with "*t" / "!*t".
---@param format? string
---@param time? integer
---@return string|osdate
---@nodiscard
function os.date(format, time) end

---The sandbox's debug: only traceback.
---@class weft.debuglib
debug = {}

---A traceback of the current call stack (or of `thread`), with `message` first.
---@overload fun(thread: thread, message?: any, level?: integer): string
---@param message? any
---@param level? integer
---@return string
---@nodiscard
function debug.traceback(message, level) end
