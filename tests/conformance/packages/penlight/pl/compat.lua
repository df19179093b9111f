-- Platform facts, read at load as Penlight's compat does.
local compat = {}
compat.dir_separator = _G.package.config:sub(1, 1)
compat.is_windows = compat.dir_separator == '\\'
compat.lua51 = _VERSION == 'Lua 5.1'
compat.lua54 = _VERSION == 'Lua 5.4'
local cfg = {}
for line in package.config:gmatch('[^\n]+') do cfg[#cfg + 1] = line end
compat.path_sep, compat.path_mark = cfg[2], cfg[3]

function compat.load(str, src, mode, env) return load(str, src, mode, env) end
compat.unpack = table.unpack or unpack
compat.pack = table.pack or function(...) return {n = select('#', ...), ...} end

function compat.getfenv(f)
  local i = 1
  while true do
    local name, value = debug.getupvalue and debug.getupvalue(f, i)
    if name == '_ENV' then return value elseif not name then break end
    i = i + 1
  end
end
return compat
