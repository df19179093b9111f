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
  assert(#package.searchers == 4, "searchers")
  local f, data = package.searchers[2]("lib.util")
  assert(type(f) == "function" and data == "scripts/lib/util.lua", "weft's searcher")
  assert(package.searchers[2]("no.such"):match("no file 'scripts/no/such.lua'"), "not found")
  assert(package.loadlib == nil, "loadlib is reachable")
  -- Lua's two C searchers, over the empty package.cpath: they find nothing.
  assert(package.searchers[3]("no.such") == "no file ''", "the C searcher")
  assert(package.searchers[4]("no.such") == "no file ''", "the C root searcher")
  assert(package.searchers[4]("nodots") == nil, "the C root searcher, a name without a dot")
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

test("require follows the caller's package.path: a template under the scripts root finds the module", function()
  package.path = "scripts/lib/?.lua;" .. package.path
  local M, file = require("util")
  assert(type(M.toward) == "function" and file == "scripts/lib/util.lua", tostring(file))
  assert(package.loaded.util == M, "package.loaded")
end)

test("a '..' in a template that stays inside the scripts root is followed; the file is named as the template names it", function()
  package.path = "scripts/ai/../lib/?.lua"
  local M, file = require("util")
  assert(type(M.toward) == "function" and file == "scripts/ai/../lib/util.lua", tostring(file))
end)

test("a template that leaves every root finds nothing: Lua's message lists each file tried", function()
  package.path = "../?.lua;/etc/?;scripts/../?.lua;;scripts/?.lua"
  local ok, err = pcall(require, "passwd")
  assert(not ok and err:find("module 'passwd' not found:\n\tno field package.preload['passwd']\n" ..
    "\tno file '../passwd.lua'\n\tno file '/etc/passwd'\n\tno file 'scripts/../passwd.lua'\n" ..
    "\tno file ''\n\tno file 'scripts/passwd.lua'", 1, true), err)
end)

test("package.path that is not a string fails the search as Lua's does", function()
  package.path = nil
  local ok, err = pcall(require, "lib.util")
  assert(not ok and err == "'package.path' must be a string", err)
end)

test("weft.start searches the caller's package.path too", function()
  package.path = "scripts/nowhere/?.lua"
  local ok, err = pcall(weft.start, "ai.idle", {})
  assert(not ok and err:find("no file 'scripts/nowhere/ai/idle.lua'", 1, true), err)
end)

test("package.searchers[2] searches the caller's package.path", function()
  package.path = "scripts/lib/?.lua"
  local f, file = package.searchers[2]("util")
  assert(type(f) == "function" and file == "scripts/lib/util.lua", tostring(file))
  assert(package.searchers[2]("lib.util") == "no file 'scripts/lib/lib/util.lua'")
end)
