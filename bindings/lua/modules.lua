-- The module system: require under the scripts root, weft.start, persist,
-- weft.modules, and the reload transactions (see commit in reload.c). Runs
-- once per state in the host's own environment with (api, loadfile,
-- run_budget, report, root, getinfo, commit, load_module, start_groups) as arguments;
-- returns the function the watcher calls with a changed file's path
-- relative to the root, reload(name), and g:start.
local api, loadfile_, run_budget, report, root, getinfo, commit, load_module, start_groups = ...
local weft, type, pairs, ipairs, error, pcall, tostring, getmetatable =
  api.weft, type, pairs, ipairs, error, pcall, tostring, getmetatable
local current, new_group, pack, unpack, sort = api.current, api.group, table.pack, table.unpack, table.sort
local mods, loading, seq, store, broken, nstart = {}, {}, 0, {}, {}, 0
local pending = {} -- saved modules whose transaction failed: in every next one
local waiting = {} -- starts whose module failed its first load: retried when a save loads it
local failed_err -- the error of the innermost first load that failed: the file shown broken
local prefix = '@' .. root .. '/'

local function name_of_source(src)
  if type(src) ~= 'string' or src:sub(1, #prefix) ~= prefix then return nil end
  local rel = src:sub(#prefix + 1)
  if rel:sub(-4) ~= '.lua' then return nil end
  return (rel:sub(1, -5):gsub('/', '.'))
end

local function caller_module(level)
  local info = getinfo(level + 1, 'S')
  return info and name_of_source(info.source)
end

local function valid(name)
  return type(name) == 'string' and name:match('^[%w_%-]+[%w_%-%.]*$') and not name:find('%.%.')
    and name:sub(-1) ~= '.'
end

-- Errors point `level` frames up; `by` is the requiring module, if any.
local function require_at(name, level, by)
  if not valid(name) then
    error("bad argument #1 to 'require' (module names are dotted paths under the scripts root, got "
      .. tostring(name) .. ')', level)
  end
  local rec = mods[name]
  if not rec then
    if loading[name] then error("module '" .. name .. "' requires itself (a require loop)", level) end
    local path = root .. '/' .. name:gsub('%.', '/') .. '.lua'
    local fn, err = loadfile_(path)
    if not fn then
      if err:match('^cannot open') then
        error("module '" .. name .. "' not found (looked for " .. path .. ')', level)
      end
      broken[path] = err -- shown until a save of it loads
      failed_err = err
      error(err, 0)
    end
    local ok, M = load_module(fn, name, loading)
    if not ok then -- a require inside it that failed is that file's error, not this one's
      if M ~= failed_err then broken[path] = tostring(M) end
      failed_err = M
      error(M, 0)
    end
    broken[path] = nil
    if M == nil then M = true end
    seq = seq + 1
    rec = {name = name, file = path, M = M, version = 1, seq = seq, dependents = {}, starts = {}}
    mods[name] = rec
  end
  if by and by ~= name then rec.dependents[by] = true end
  return rec.M
end

function api.require(name)
  local M = require_at(name, 3, caller_module(2)) -- not a tail call: levels count
  return M
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
-- reload retries it.
local function launch(rec, entry, fn, ...)
  entry.version = rec.version
  entry.task = entry.sub:spawn(fn, ...)
  entry.task.name = rec.name
  return entry.task
end

local function finished(entry)
  if entry.startless then return false end -- waits for a version with start
  if not entry.sub.alive then return true end
  local st = entry.task.status
  return (st == 'done' or st == 'cancelled') and #entry.sub:tasks() == 0
end

local function prune(rec)
  for entry in pairs(rec.starts) do
    if finished(entry) then rec.starts[entry] = nil end
  end
end

local function start_in(g, level, name, state, ...)
  if not valid(name) then
    error("bad argument #1 to 'start' (module name expected, got " .. tostring(name) .. ')', level)
  end
  if not g then local t = current(); g = t and t.group or weft.root end
  local okr, M = pcall(require_at, name, level + 2) -- pcall is a level too
  if not okr then -- its first load failed: the save that fixes it starts it
    nstart = nstart + 1
    waiting[#waiting + 1] = {g = g, name = name, state = state, args = pack(...), order = nstart}
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
  start_groups[entry.sub] = true -- reports name the entity around it, not it
  return launch(rec, entry, M.start, state, ...)
end

function weft.start(name, state, ...)
  local t = start_in(nil, 3, name, state, ...)
  return t
end

local function group_start(g, name, state, ...)
  local t = start_in(g, 4, name, state, ...)
  return t
end

function weft.modules()
  local list = {}
  for _, rec in pairs(mods) do
    prune(rec)
    local live, old = 0, 0
    for entry in pairs(rec.starts) do
      local st = entry.task.status
      if st == 'waiting' or st == 'running' then
        live = live + 1
        if entry.version < rec.version then old = old + 1 end
      end
    end
    list[#list + 1] = {name = rec.name, file = rec.file, version = rec.version, tasks = live,
                       old = old, error = broken[rec.file]}
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

-- A module's new value, staged under the budget; raises on failure.
local function stage(r)
  local fn, err = loadfile_(r.file)
  if not fn then error(err, 0) end
  local ok, M = run_budget(fn, r.name)
  if not ok then error(M, 0) end
  if M == nil then M = true end
  if plain(r.M) and not plain(M) then error(r.file .. ': the module must return a table', 0) end
  return M
end

local function fail(file, err)
  broken[file] = tostring(err)
  report(err)
  return false
end

local function restart(rec, entry, old_version)
  if finished(entry) then rec.starts[entry] = nil return end
  entry.sub:cancel()
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
    if w.g.alive then
      local ok, err = pcall(start_in, w.g, 1, w.name, w.state, unpack(w.args, 1, w.args.n))
      if not ok then report(err) end
    end
  end
end

local function check_unloaded(name)
  if not valid(name) then return false end
  local path = root .. '/' .. name:gsub('%.', '/') .. '.lua'
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
local function reload(name)
  if not mods[name] then return check_unloaded(name) end
  -- a save whose transaction failed elsewhere (in a dependent) is still
  -- unloaded: it joins until it lands
  local roots = {name}
  for p in pairs(pending) do if p ~= name and mods[p] then roots[#roots + 1] = p end end
  sort(roots, function(a, b) return mods[a].seq < mods[b].seq end)
  local list = transaction(roots)
  local ok, r, err = commit(list, stage, broken)
  if not ok then
    local res = fail(r.file, err)
    pending[name] = true
    return res
  end
  for _, m in ipairs(list) do pending[m.name] = nil end
  -- committed: a failure from here on is reported, never undone
  local okr, rerr = pcall(restart_all, list)
  if not okr then report(rerr) end
  retry_waiting()
  return true
end

local function changed(rel)
  if rel:sub(-4) ~= '.lua' then return false end
  return reload((rel:sub(1, -5):gsub('/', '.')))
end

return changed, reload, group_start
