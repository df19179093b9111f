-- luacheck's settings for the game's scripts (Debian's lua-check; make
-- test runs `luacheck --config scripts/.luacheckrc scripts`, an editor's
-- luacheck finds this file from scripts/). The globals a script sees are
-- read from the editor definitions, weft's (bindings/weft.d.lua) and the
-- game's (demo/moonwatch.d.lua): a verb declared there is known here.
std = "lua54"
max_line_length = 120
self = false          -- a method need not use its self (Scene:release)
ignore = { "212/_.*" } -- an argument named _x is unused on purpose

-- The top-level names a definitions file declares: `function name(`,
-- `name = {}`.
local function declared(file, into)
  for line in file:lines() do
    local name = line:match("^function ([%a_][%w_]*)%s*%(") or line:match("^([%a_][%w_]*)%s*=")
    if name then into[#into + 1] = name end
  end
  file:close()
end

local names = {}
for _, up in ipairs { "", "../", "../../", "../../../" } do -- from the top, scripts/ or below
  local weft = io.open(up .. "bindings/weft.d.lua")
  local game = io.open(up .. "demo/moonwatch.d.lua")
  if weft and game then
    declared(weft, names)
    declared(game, names)
    break
  end
  if weft then weft:close() end
  if game then game:close() end
end
read_globals = names
