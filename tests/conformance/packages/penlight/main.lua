-- Loads and uses the Penlight-shaped package as an application would.
local pl, where = require 'pl'
print('pl loaded as', pl._NAME, pl._PATH, where)
print('again', select('#', require 'pl'), require('pl') == pl)
local utils = pl.utils
print('separator', utils.dir_separator, pl.compat.is_windows, pl.compat.path_sep, pl.compat.path_mark)
print('stdout', utils.stdout_type, utils.stderr_type, io.type(io.stdin), io.type(42))
utils.printf('%s has %d letters\n', 'penlight', #'penlight')
utils.fprintf(io.stdout, '%5.2f|%-4s|\n', math.pi, 'x')
utils.say('said', 'through', 'stdout')
io.write('pieces ', 1, ' ', 2.5, ' ', 10 // 3, '\n')
io.stdout:write('chained '):write('writes\n')

local List = pl.List
local l = List{1, 2, 3}:append(4)
print(l, #l, l:map(function(x) return x * x end), l:filter(function(x) return x % 2 == 0 end))
print(l:reduce(function(a, b) return a + b end, 0), l:slice(2, 3), l == List{1, 2, 3, 4}, l == List{1})
print(l .. List{5, 6}, List.split('a,b,,c', ','), getmetatable(l) == List)
local ok, err = pcall(utils.assert_arg, 1, 42, 'string')
print(ok, err)
ok, err = pcall(function() return pl.nothing end)
print(ok, err)

local stringx = require 'pl.stringx'
local text = assert(utils.readfile('data.txt'))
for line in stringx.lines(text) do
  if #line > 0 then print('[' .. stringx.strip(line) .. ']', stringx.startswith(line, 'al'), stringx.rjust(stringx.strip(line), 8, '.')) end
end
print(utils.readfile('no-such-file.txt'))
local n = 0
for a, b in io.lines('data.txt', 1, 'l') do n = n + 1 print('lines', a, b) end
local f = assert(io.open('data.txt', 'r'))
print(f:read('n'), f:read(5), f:seek('cur'), f:read('L'), f:seek('end'), f:read('a'), f:read('l'))
print(f:close(), io.type(f), pcall(f.read, f))
print(pl.tablex.deepcompare({1, {2}}, {1, {2}}), table.concat(pl.tablex.keys{b = 1, a = 2, c = 3}, ' '))
print(utils.memoize(function(x) return x * 2 end)(21), utils.is_type(l, List), utils.is_type('s', 'string'))
local sq = utils.unpack(utils.pack(1, nil, 3), 1, 3)
print(sq, compat, pl.compat.lua54, pl.compat.load('return ...', 'x', 't', {})(7))
