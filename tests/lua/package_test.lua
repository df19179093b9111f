-- require and the package view behave as Lua 5.4's, under the scripts
-- root (tests/conformance/packages runs whole packages under both).

test("require returns the module and its file on the first load, the module after", function()
  local M, path = require("lib.util")
  assert(type(M) == "table", "module " .. tostring(M))
  assert(path == "scripts/lib/util.lua", "loader data " .. tostring(path))
  local again = table.pack(require("lib.util"))
  assert(again.n == 1 and again[1] == M, "a second require gave " .. again.n .. " values")
  assert(package.loaded["lib.util"] == M, "package.loaded does not hold the module")
end)

test("'/' separates a module name as '.' does: one module", function()
  local a = require("lib/check")
  assert(a == require("lib.check"), "two modules for one file")
end)

test("package.loaded preloads a module; package.preload is asked first", function()
  package.loaded.fake = {y = 2}
  assert(require("fake").y == 2, "package.loaded ignored")
  local got
  package.preload.pre = function(...) got = table.pack(...) return "P" end
  local v, data = require("pre")
  assert(v == "P" and data == ":preload:", "preload gave " .. tostring(v) .. ", " .. tostring(data))
  assert(got.n == 2 and got[1] == "pre" and got[2] == ":preload:", "preload's arguments")
  assert(package.loaded.pre == "P", "preload's value is not in package.loaded")
end)

test("package describes the search: config, path, searchers", function()
  assert(package.config == "/\n;\n?\n!\n-\n", "config")
  assert(package.path == "scripts/?.lua;scripts/?/init.lua", "path " .. package.path)
  assert(#package.searchers == 2, "searchers")
  local f, data = package.searchers[2]("lib.util")
  assert(type(f) == "function" and data == "scripts/lib/util.lua", "weft's searcher")
  assert(package.searchers[2]("no.such"):match("no file 'scripts/no/such.lua'"), "not found")
  assert(package.loadlib == nil, "loadlib is reachable")
end)

test("package.searchpath finds what loadfile reads, as Lua's does", function()
  assert(package.searchpath("lib.util", package.path) == "scripts/lib/util.lua", "lib.util")
  assert(package.searchpath("lib_util", "scripts/?.lua", "_", "/") == "scripts/lib/util.lua", "sep, rep")
  local f = assert(loadfile(package.searchpath("lib.util", package.path)))
  assert(type(f) == "function", "loadfile of what it found")
  local none, tried = package.searchpath("no.such", package.path)
  assert(none == nil and tried == "no file 'scripts/no/such.lua'\n\tno file 'scripts/no/such/init.lua'",
    "each file tried: " .. tostring(tried))
  -- outside the scripts root nothing is found, whatever is on disk
  assert(package.searchpath("passwd", "/etc/?") == nil, "read outside the root")
  assert(package.searchpath("a.b", "scripts/?.lua", "") == nil, "an empty sep replaces nothing")
  -- templates split as Lua splits them: empty ones are tried too
  assert(select(2, package.searchpath("x", "a;;b")) == "no file 'a'\n\tno file ''\n\tno file 'b'")
  assert(select(2, package.searchpath("x", "")) == "no file ''")
  local ok, err = pcall(package.searchpath, nil, package.path)
  assert(not ok and err:find("bad argument #1 to 'package.searchpath'", 1, true), err)
end)

test("a script's package.path is its own: the search does not change", function()
  package.path = "/etc/?.lua"
  assert(select(2, require("lib.game")) == "scripts/lib/game.lua", "the search followed package.path")
end)
