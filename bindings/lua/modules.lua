-- The module system: require under the scripts root, weft.start, persist,
-- weft.modules, and the reload transactions: which modules a save
-- reloads, in what order, and restarting their tasks (C stages and
-- commits them: see reload.c). Runs once per state in the host's own
-- environment with one table of what C offers (api, root, loadfile,
-- load_module, commit, report, getinfo, start_groups, searchpath, place,
-- caller_env, new_env, cancels); returns one table:
-- changed(path) for the watcher (a path relative to the root),
-- reload(name), and group_start for g:start.
local host = ...
local api, loadfile_, report, root, getinfo, commit, load_module, start_groups =
  host.api, host.loadfile, host.report, host.root, host.getinfo, host.commit, host.load_module,
  host.start_groups
local place, caller_env, new_env, cancels = host.place, host.caller_env, host.new_env, host.cancels
local weft, type, pairs, ipairs, error, pcall, tostring, getmetatable, rawget, rawset, next =
  api.weft, type, pairs, ipairs, error, pcall, tostring, getmetatable, rawget, rawset, next
local current, new_group, pack, unpack, sort = api.current, api.group, table.pack, table.unpack, table.sort
local mods, loading, seq, store, broken, nstart = {}, {}, 0, {}, {}, 0
local pending = {} -- saved modules whose transaction failed: in every next one
local waiting = {} -- starts whose module failed its first load: retried when a save loads it
local failed_err -- the error of the innermost first load that failed: the file shown broken
local prefix = '@' .. root .. '/'

local by_file = {} -- a loaded module's file -> its name (pl/init.lua -> pl)

-- The package view: package.loaded is the table require keeps (a script
-- may preload a module by writing it), package.preload is asked first;
-- package.path is the search's templates (each script gets a copy of
-- this table: a require follows its caller's package.path, and a module
-- found gets the path it was found with); config and searchers describe
-- what weft does.
local loaded, preload = {}, {}
local default_path = root .. '/?.lua;' .. root .. '/?/init.lua'
local package = {loaded = loaded, preload = preload, config = '/\n;\n?\n!\n-\n',
                 path = default_path, cpath = '', searchpath = host.searchpath}
api.package = package

-- The standard libraries are in package.loaded, as Lua's are there: the
-- copies of an environment of their own (package.loaded._G), so a
-- library that looks for them there finds the sandbox's, and one that
-- changes them there reaches no script's own copies. require of one,
-- while package.loaded still holds it, gives the caller's own copy, as
-- require 'string' is string in Lua.
local std = {}
do
  local env = new_env()
  for _, name in ipairs{'string', 'table', 'math', 'io', 'os', 'coroutine', 'utf8', 'debug',
                        'package'} do
    std[name] = rawget(env, name)
    loaded[name] = std[name]
  end
  std._G, loaded._G = env, env
end

local function name_of_source(src)
  if type(src) ~= 'string' or src:sub(1, #prefix) ~= prefix then return nil end
  local file = src:sub(2)
  if by_file[file] then return by_file[file] end
  local rel = src:sub(#prefix + 1)
  if rel:sub(-4) ~= '.lua' then return nil end
  return (rel:sub(1, -5):gsub('/', '.'))
end

local function caller_module(level)
  local info = getinfo(level + 1, 'S')
  return info and name_of_source(info.source)
end

-- Names are Lua's dotted paths; '/' separates as '.' does (require
-- 'mods/m' and require 'mods.m' are one module).
local function valid(name)
  return type(name) == 'string' and name:match('^[%w_%-]+[%w_%-%./]*$') and not name:find('[%./][%./]')
    and not name:find('[%./]$')
end

local function canonical(name) return (name:gsub('/', '.')) end

-- The package.path of the script that called (its own copy, read raw):
-- the templates its require searches, as Lua's require reads its one
-- package.path; the default when it has no package table.
local function caller_path()
  local env = caller_env()
  local pk = type(env) == 'table' and rawget(env, 'package')
  if type(pk) ~= 'table' then return default_path end
  local path = rawget(pk, 'path')
  if type(path) == 'number' then path = tostring(path) end
  if type(path) ~= 'string' then error("'package.path' must be a string", 0) end
  return path
end

-- Lua's two C searchers, with the caller's package.cpath: no C module
-- loads in weft, so each template names a file not found ("no file ''"
-- for the default, empty cpath), as Lua words it; the second searches a
-- dotted name's first part, and nothing for another name.
local function caller_cpath()
  local env = caller_env()
  local pk = type(env) == 'table' and rawget(env, 'package')
  local cpath = type(pk) == 'table' and rawget(pk, 'cpath') or ''
  if type(cpath) == 'number' then cpath = tostring(cpath) end
  if type(cpath) ~= 'string' then error("'package.cpath' must be a string", 0) end
  return cpath
end

local function no_c_file(name, cpath)
  local sub = name:gsub('%.', '/')
  return "no file '" .. cpath:gsub('%?', function() return sub end):gsub(';', "'\n\tno file '") .. "'"
end

local function c_searchers(name, cpath)
  local lines = '\n\t' .. no_c_file(name, cpath)
  local root = name:match('^([^.]*)%.')
  if root then lines = lines .. '\n\t' .. no_c_file(root, cpath) end
  return lines
end

-- Lua's search of package.path: each ';'-separated template (empty ones
-- too) with '?' the name ('.' made '/'), the first file that lies under
-- the scripts root (by its letters; by the file system too, with the
-- default loader) and reads through the state's loader: the function, its
-- file as the template names it (Lua's loader data and chunk name) and as
-- the root names it (root/clean path: what the watcher reports); or nil,
-- the load error, the file; or nil, nil and a line per file tried ("no
-- file 'x'", and why when the file is there but may not be read).
local function search(name, path)
  local sub = canonical(name):gsub('%.', '/')
  local tried, i = {}, 1
  while true do
    local j = path:find(';', i, true)
    local file = path:sub(i, j and j - 1 or -1):gsub('%?', sub)
    local full = place(file)
    local line = "no file '" .. file .. "'"
    if full then
      local fn, err = loadfile_(file, path)
      if fn then return fn, file, full end
      local pre = 'cannot open ' .. file .. ' ('
      if err:sub(1, #pre) ~= pre then return nil, err, file end
      local why = err:sub(#pre + 1, -2)
      if why ~= 'No such file or directory' and why ~= 'no such script' then
        line = line .. ' (' .. why .. ')'
      end
    end
    tried[#tried + 1] = line
    if not j then break end
    i = j + 1
  end
  return nil, nil, tried
end

local function bad_name(name, level)
  error("bad argument #1 to 'require' (module names are paths under the scripts root, "
    .. "'.' or '/' separated, got " .. tostring(name) .. ')', level + 1)
end

-- Errors point `level` frames up; `by` is the requiring module, if any;
-- templates the package.path searched (nil: the default). Returns the
-- module and, on its first load, its loader data.
local function require_at(name, level, by, templates)
  if type(name) ~= 'string' then bad_name(name, level) end
  local given = name
  local v = loaded[given]
  if v then
    local rec = valid(given) and mods[canonical(given)]
    if rec and by and by ~= rec.name and v == rec.M then rec.dependents[by] = true end
    return v
  end
  local pre = preload[given]
  if pre ~= nil then
    local M = pre(given, ':preload:')
    if M ~= nil then loaded[given] = M end
    if loaded[given] == nil then loaded[given] = true end
    return loaded[given], ':preload:'
  end
  if not valid(name) then bad_name(name, level) end
  name = canonical(name)
  local rec = mods[name]
  if rec and loaded[name] then
    loaded[given] = loaded[name]
  else
    if loading[name] then error("module '" .. name .. "' requires itself (a require loop)", level) end
    local fn, err, file = search(name, templates or default_path) -- found: fn, its file, root/clean path
    if not fn then
      if not err then -- Lua's message, at the caller's line
        error("module '" .. given .. "' not found:\n\tno field package.preload['" .. given .. "']\n\t"
          .. table.concat(file, '\n\t') .. c_searchers(given, caller_cpath()), level)
      end
      broken[file] = err -- shown until a save of it loads
      failed_err = err
      error(err, 0)
    end
    local path, full = err, file
    local ok, M = load_module(fn, given, loading, path, name)
    if not ok then -- a require inside it that failed is that file's error, not this one's
      if M ~= failed_err then broken[path] = tostring(M) end
      failed_err = M
      error(M, 0)
    end
    broken[path] = nil
    if M == nil then M = loaded[given] end -- a module may set package.loaded itself
    if M == nil then M = true end
    if rec then -- loaded again after a script cleared package.loaded
      rec.M = M
    else
      seq = seq + 1
      rec = {name = name, file = path, M = M, version = 1, seq = seq, dependents = {}, starts = {},
             path = templates ~= default_path and templates or nil} -- stage's package.path
      mods[name] = rec
      by_file[path], by_file[full] = name, name
    end
    loaded[name], loaded[given] = M, M
    if by and by ~= name then rec.dependents[by] = true end
    return M, path
  end
  if by and by ~= name then rec.dependents[by] = true end
  return rec.M
end

package.searchers = {
  function(name)
    local f = preload[name]
    if f == nil then return "no field package.preload['" .. tostring(name) .. "']" end
    return f, ':preload:'
  end,
  function(name)
    if not valid(name) then return 'no module name ' .. tostring(name) end
    local fn, err, tried = search(name, caller_path())
    if fn then return fn, err end
    if err then error(err, 0) end
    return table.concat(tried, '\n\t')
  end,
  function(name) return no_c_file(tostring(name), caller_cpath()) end,
  function(name)
    local root = tostring(name):match('^([^.]*)%.')
    if root then return no_c_file(root, caller_cpath()) end
  end,
}

function api.require(name)
  local lib = std[name]
  if lib ~= nil and loaded[name] == lib then
    local env = caller_env()
    local own = type(env) == 'table' and (name == '_G' and env or rawget(env, name))
    if type(own) == 'table' then return own end
    return lib
  end
  local M, data = require_at(name, 3, caller_module(2), caller_path()) -- not a tail call: levels count
  if data == nil then return M end
  return M, data
end

function api.persist(key, init)
  if type(key) ~= 'string' then
    error("bad argument #1 to 'persist' (string expected, got " .. type(key) .. ')', 2)
  end
  local t = store[key]
  if t == nil then
    if type(init) == 'function' then t = init() elseif init == nil then t = {} else t = init end
    store[key] = t
  end
  return t
end

-- A start: a module's entry running for one state table, in a group of
-- its own under the caller's group, so everything it spawns is replaced
-- with it. Kept while it has tasks, and after a failure so the next good
-- reload retries it, until someone else cancels its group (a destroyed
-- entity, a cinematic player done with a scene that failed, a soft reset):
-- then it is over.
local function launch(rec, entry, fn, ...)
  entry.version = rec.version
  entry.cancels = cancels(entry.sub)
  entry.task = entry.sub:spawn(fn, ...)
  entry.task.name = rec.name
  return entry.task
end

local function finished(entry)
  if not entry.sub.alive or cancels(entry.sub) ~= entry.cancels then return true end
  if entry.startless then return false end -- waits for a version with start
  local st = entry.task.status
  return (st == 'done' or st == 'cancelled') and #entry.sub:tasks() == 0
end

local function prune(rec)
  for entry in pairs(rec.starts) do
    if finished(entry) then rec.starts[entry] = nil end
  end
end

-- path: the package.path searched (the caller's).
local function start_in(g, level, path, name, state, ...)
  if not valid(name) then
    error("bad argument #1 to 'start' (module name expected, got " .. tostring(name) .. ')', level)
  end
  if not g then local t = current(); g = t and t.group or weft.root end
  local okr, M = pcall(require_at, name, level + 2, nil, path) -- pcall is a level too
  if not okr then -- its first load failed: the save that fixes it starts it
    nstart = nstart + 1
    waiting[#waiting + 1] = {g = g, path = path, name = name, state = state, args = pack(...),
                             order = nstart, cancels = cancels(g)}
    error(M, 0)
  end
  if type(M) ~= 'table' or type(M.start) ~= 'function' then
    error("module '" .. name .. "' has no start function", level)
  end
  local rec = mods[name]
  prune(rec)
  nstart = nstart + 1
  local entry = {state = state, args = pack(...), order = nstart, sub = new_group{name = name, parent = g}}
  rec.starts[entry] = true
  start_groups[entry.sub] = entry -- reports name the entity around it, not it
  return launch(rec, entry, M.start, state, ...)
end

function weft.start(name, state, ...)
  local t = start_in(nil, 3, caller_path(), name, state, ...)
  return t
end

-- Whether group g is sub or inside it.
local function inside(g, sub)
  while g do
    if g == sub then return true end
    g = g.parent
  end
  return false
end

-- g:spawn from a start's code into a group outside the start's own (an
-- entity's ears, spawned into its group): the task belongs to that start
-- for reloads, so a restart replaces it with the start's other tasks
-- instead of leaving one more copy on old code each save. So does what
-- such a helper g:spawns in turn (helper_of[task] = its start), also
-- during its first run, before the spawn that started it has returned:
-- early[spawner id] holds those until that spawn returns and says whether
-- the spawner is a helper (emptied once no first run goes on, and each
-- frame: a first run ends in the frame it began). Cancelling
-- the start otherwise (a skipped cinematic) leaves them alone, as g:spawn
-- says.
local helper_of = setmetatable({}, {__mode = 'k'})
local early, early_frame = {}, -1 -- first runs end in the frame they began

local function adopt(entry, t, id)
  local kids = early[id]
  early[id] = nil
  if inside(t.group, entry.sub) then return end -- its own already
  local hs = entry.helpers
  if not hs then hs = {n = 0, cap = 32}; entry.helpers = hs end
  if hs.n >= hs.cap then -- keep the list as long as what lives (amortized)
    local live = {n = 0}
    for i = 1, hs.n do
      local st = hs[i].status
      if st == 'waiting' or st == 'running' then live.n = live.n + 1; live[live.n] = hs[i] end
    end
    live.cap = live.n * 2 > 32 and live.n * 2 or 32
    hs = live
    entry.helpers = hs
  end
  hs.n = hs.n + 1
  hs[hs.n] = t
  helper_of[t] = entry
  if kids then
    for i = 1, #kids, 2 do adopt(entry, kids[i], kids[i + 1]) end
  end
end

local function note_spawn(t, id, me_id, first_run, outermost)
  local f = api.frame()
  if f ~= early_frame then
    early_frame = f
    if next(early) then early = {} end
  end
  local me = current()
  local entry = me and helper_of[me]
  local g = me and me.group
  while g and not entry do
    entry = start_groups[g]
    g = g.parent
  end
  if entry then
    adopt(entry, t, id)
  else
    if not first_run then early[id] = nil end -- t is no helper: nor what it spawned
    if first_run then -- the spawner may turn out one: t's own go with t
      local kids = early[me_id]
      if not kids then kids = {}; early[me_id] = kids end
      kids[#kids + 1] = t
      kids[#kids + 1] = id
    end
  end
  if outermost and next(early) then early = {} end
end

local function group_start(g, name, state, ...)
  local t = start_in(g, 4, caller_path(), name, state, ...)
  return t
end

function weft.modules()
  local list = {}
  for _, rec in pairs(mods) do
    prune(rec)
    local live, old, ms, avg = 0, 0, 0, 0
    for entry in pairs(rec.starts) do
      local st = entry.task.status
      if st == 'waiting' or st == 'running' then
        live = live + 1
        if entry.version < rec.version then old = old + 1 end
      end
      local sub = entry.sub -- the start's own group: its tasks' time, ended ones too
      if sub.alive then ms, avg = ms + sub.ms, avg + sub.avg_ms end
    end
    list[#list + 1] = {name = rec.name, file = rec.file, version = rec.version, tasks = live,
                       old = old, ms = ms, avg_ms = avg, error = broken[rec.file]}
  end
  sort(list, function(a, b) return a.name < b.name end)
  return list
end

function weft.reload_errors()
  local list = {}
  for file, msg in pairs(broken) do list[#list + 1] = {file = file, error = msg} end
  sort(list, function(a, b) return a.file < b.file end)
  return list
end

local function plain(t) return type(t) == 'table' and getmetatable(t) == nil end

local function fail(file, err)
  broken[file] = tostring(err)
  report(err)
  return false
end

local function restart(rec, entry, old_version)
  if finished(entry) then rec.starts[entry] = nil return end
  local hs = entry.helpers
  entry.helpers = nil
  if hs then for i = 1, hs.n do hs[i]:cancel() end end
  entry.sub:cancel()
  entry.cancels = cancels(entry.sub) -- its own cancel: the start goes on
  local M = rec.M
  if type(M.on_reload) == 'function' then
    entry.startless = nil
    launch(rec, entry, M.on_reload, entry.state, old_version)
  elseif type(M.start) == 'function' then
    entry.startless = nil
    launch(rec, entry, M.start, entry.state, unpack(entry.args, 1, entry.args.n))
  else -- stopped; started again by the next version that has start
    entry.startless = true
    error(rec.file .. ": module '" .. rec.name .. "' has no start function any more "
      .. '(its entities stop until a version has one)', 0)
  end
end

-- The module and every module that required it, each after the modules
-- it requires (reverse post-order over the "required by" edges).
local function transaction(names)
  local order, seen = {}, {}
  local function visit(n)
    if seen[n] or not mods[n] then return end
    seen[n] = true
    local deps = {}
    for d in pairs(mods[n].dependents) do deps[#deps + 1] = d end
    sort(deps, function(a, b) return mods[a] and mods[b] and mods[a].seq < mods[b].seq end)
    for _, d in ipairs(deps) do visit(d) end
    order[#order + 1] = mods[n]
  end
  for _, name in ipairs(names) do visit(name) end
  local list = {}
  for i = #order, 1, -1 do list[#list + 1] = order[i] end
  return list
end

local function restart_all(list)
  for _, r in ipairs(list) do
    if plain(r.M) and r.M.reload ~= 'keep' then
      local entries = {}
      for entry in pairs(r.starts) do entries[#entries + 1] = entry end
      sort(entries, function(a, b) return a.order < b.order end)
      for _, entry in ipairs(entries) do
        local ok, err = pcall(restart, r, entry, r.version - 1)
        if not ok then report(err) end
      end
    end
  end
end

-- A file no script has required yet: a syntax error is reported now,
-- when it is saved, and running it waits for the first require.
-- The starts whose module failed its first load, each tried again in the
-- order they were asked for; one that fails again waits for the next save.
local function retry_waiting()
  if #waiting == 0 then return end
  local list = waiting
  waiting = {}
  for _, w in ipairs(list) do
    if w.g.alive and cancels(w.g) == w.cancels then -- its group was not cancelled meanwhile
      local ok, err = pcall(start_in, w.g, 1, w.path, w.name, w.state, unpack(w.args, 1, w.args.n))
      if not ok then report(err) end
    end
  end
end

local function check_unloaded(path)
  local fn, err = loadfile_(path)
  if fn then
    broken[path] = nil
    retry_waiting()
  elseif not err:match('^cannot open') then
    fail(path, err)
  end
  return false
end

-- One transaction (see commit in reload.c): every module staged in
-- order and merged as it succeeds, so dependents see new values; any
-- failure puts every merged table back and changes nothing.
local function reload(name, path)
  if not mods[name] then
    if not valid(name) then return false end
    return check_unloaded(path or root .. '/' .. name:gsub('%.', '/') .. '.lua')
  end
  -- a save whose transaction failed elsewhere (in a dependent) is still
  -- unloaded: it joins until it lands
  local roots = {name}
  for p in pairs(pending) do if p ~= name and mods[p] then roots[#roots + 1] = p end end
  sort(roots, function(a, b) return mods[a].seq < mods[b].seq end)
  local list = transaction(roots)
  local ok, r, err = commit(list, broken)
  if not ok then
    local res = fail(r.file, err)
    pending[name] = true
    return res
  end
  for _, m in ipairs(list) do
    pending[m.name] = nil
    -- package.loaded is the scripts' to set a metatable on: walked and
    -- written raw, so no __pairs or __newindex of theirs runs here
    local k, v = next(loaded)
    while k ~= nil do
      if type(k) == 'string' and v ~= m.M and k ~= m.name and canonical(k) == m.name then rawset(loaded, k, m.M) end
      k, v = next(loaded, k)
    end
    rawset(loaded, m.name, m.M)
  end
  -- committed: a failure from here on is reported, never undone
  local okr, rerr = pcall(restart_all, list)
  if not okr then report(rerr) end
  retry_waiting()
  return true
end

-- A saved file's module: the one loaded from it (an init.lua is its
-- directory's module), else the name the file would be required by.
local function changed(rel)
  if rel:sub(-4) ~= '.lua' then return false end
  local path = root .. '/' .. rel
  if by_file[path] then return reload(by_file[path]) end
  local name = rel:sub(1, -5)
  if name:sub(-5) == '/init' and not mods[name:gsub('/', '.')] then name = name:sub(1, -6) end
  return reload((name:gsub('/', '.')), path)
end

return {changed = changed, reload = reload, group_start = group_start, note_spawn = note_spawn}
