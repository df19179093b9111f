-- Module shapes libraries use: init.lua packages, slash names, the
-- loader data, modules that set package.loaded, preload, loadfile, dofile.
print('arg', arg[0], #arg)
local m, where = require('mods/m')
print(m.name, m.path, where, m.sep)
print(require('mods/m') == m)
local cfg, cwhere = require('cfg')
print(cfg.name, cfg.path, cwhere, cfg.dirsep, cfg.pathsep, cfg.mark, cfg.execdir, cfg.ignore)
print(cfg.defaults.speed, table.concat(cfg.defaults.names, ''), cfg.defaults.from)
print(require('cfg') == cfg, package.loaded['cfg'] == cfg, package.loaded['cfg.defaults'] == cfg.defaults)
local legacy, lwhere = require('util.legacy')
print(legacy.kind, lwhere, require('util.legacy') == legacy)

package.preload['virtual'] = function(name, data) return {name = name, data = data} end
local v, vdata = require('virtual')
print(v.name, v.data, vdata)
package.loaded['fake'] = {answer = 42}
print(require('fake').answer, select('#', require('fake')))

local loader, found = package.searchers[2]('cfg.defaults')
print(type(loader), found, loader('x', found).from)
print(type(package.searchers[2]('no.such')), type(package.searchers[1]('no.such')))
local ok, err = pcall(require, 'no.such')
print(ok, (err:match("^module 'no.such' not found")))

local f = assert(loadfile('util/chunk.lua'))
print(f(2, 3))
print(dofile('util/chunk.lua'))
print(loadfile('util/missing.lua') == nil)
print(loadfile('util/chunk.lua', 'b'))
local env = {}
local g = assert(loadfile('util/counter.lua', 't', env))
print(g(), g(), env.COUNT, COUNT)
print(dofile('util/counter.lua'), COUNT)

local i = 0
for line in io.lines('util/chunk.lua', 'L') do i = i + 1 io.write(i, ': ', line) end
local n = 0
for line in io.lines('util/chunk.lua') do n = n + #line end
print('chars', n)
