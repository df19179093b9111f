-- What plain Lua libraries look for is where they look: warn, the
-- standard libraries in package.loaded, io.open's and loadfile's
-- failures as values (Penlight, lume and json.lua suites run unchanged).

test("warn is Lua's: at least one piece, every piece a string (numbers too)", function()
  assert(type(warn) == "function", "no warn")
  local ok, err = pcall(warn)
  assert(not ok and err == "bad argument #1 to 'warn' (string expected, got no value)", err)
  ok, err = pcall(warn, "a", {})
  assert(not ok and err == "bad argument #2 to 'warn' (string expected, got table)", err)
  warn("low ", "fuel: ", 3) -- off: shown nowhere (tests/cli/run.sh checks what is shown)
  warn("@on")
  warn("@off")
  warn("@unknown control")
end)

local READ_ONLY = "(scripts read files under the scripts and assets roots, and write none)"

test("io.open in a writing mode fails as Lua's does when it may not write: nil, message, errno", function()
  local f, msg, code = io.open("scripts/out.txt", "w")
  assert(f == nil and code == 13, tostring(code))
  assert(msg == "scripts/out.txt: writing files is not available to scripts " .. READ_ONLY, msg)
  for _, mode in ipairs{"a", "r+", "w+", "a+", "wb", "r+b"} do
    assert(select("#", io.open("scripts/main.lua", mode)) == 3 and io.open("scripts/main.lua", mode) == nil, mode)
  end
  local ok, err = pcall(io.open, "scripts/main.lua", "rw")
  assert(not ok and err:find("bad argument #2 to 'io.open' (invalid mode)", 1, true), err)
end)

test("io.open of a missing file or one outside the roots: nil, message, errno", function()
  assert(select("#", io.open("scripts/none.txt")) == 3)
  local f, msg, code = io.open("scripts/none.txt")
  assert(f == nil and msg == "scripts/none.txt: No such file or directory" and code == 2, msg)
  f, msg, code = io.open("/etc/passwd")
  assert(f == nil and code == 13 and msg == "/etc/passwd: not under the scripts or assets root " .. READ_ONLY, msg)
  f, msg, code = io.open("scripts/lib/../../README.md")
  assert(f == nil and code == 13 and msg:find("not under the scripts or assets root", 1, true), msg)
end)

test("a '..' that stays inside a root is followed, as the file system would", function()
  local f = assert(io.open("scripts/lib/../main.lua"))
  assert(f:read("a") == io.open("scripts/main.lua"):read("a"))
  assert(loadfile("scripts/lib/../lib/util.lua"), "loadfile")
  assert(io.open("scripts//lib/./util.lua"), "empty and '.' parts")
end)

test("io.lines and io.input raise Lua's message for a file they cannot open", function()
  local ok, err = pcall(io.lines, "scripts/none.txt")
  assert(not ok and err == "cannot open file 'scripts/none.txt' (No such file or directory)", err)
  ok, err = pcall(io.input, "scripts/none.txt")
  assert(not ok and err == "cannot open file 'scripts/none.txt' (No such file or directory)", err)
  ok, err = pcall(io.lines, "/etc/passwd")
  assert(not ok and err == "cannot open file '/etc/passwd' (not under the scripts or assets root " .. READ_ONLY .. ")", err)
end)

test("loadfile and dofile fail with Lua's message: cannot open path: why", function()
  local f, err = loadfile("scripts/none.lua")
  assert(f == nil and err == "cannot open scripts/none.lua: No such file or directory", err)
  local ok, derr = pcall(dofile, "scripts/none.lua")
  assert(not ok and derr == err, derr)
  f, err = loadfile("/etc/passwd")
  assert(f == nil and err == "cannot open /etc/passwd: not under the scripts root (scripts load only there)", err)
end)

local function keys(t)
  local ks = {}
  for k in pairs(t) do ks[#ks + 1] = tostring(k) end
  table.sort(ks)
  return table.concat(ks, ",")
end

local STD = {"string", "table", "math", "io", "os", "coroutine", "utf8", "debug", "package", "_G"}

test("package.loaded holds the standard libraries, the sandbox's versions", function()
  for _, name in ipairs(STD) do
    assert(type(package.loaded[name]) == "table", name .. " is not in package.loaded")
  end
  assert(keys(package.loaded.debug) == "getinfo,getmetatable,setmetatable,traceback", keys(package.loaded.debug))
  assert(keys(package.loaded.os) == "clock,date,time", keys(package.loaded.os))
  assert(package.loaded.string.dump == nil and package.loaded.package.loadlib == nil, "Lua's own")
  assert(package.loaded._G.require == require and package.loaded._G.wait == wait, "_G")
end)

test("require of a standard library gives the caller's own copy, as require 'string' is string in Lua", function()
  for _, name in ipairs(STD) do
    assert(require(name) == _G[name], "require('" .. name .. "') is not " .. name)
    assert(select("#", require(name)) == 1, name)
  end
  assert(require("debug") == debug and keys(require("debug")) == "getinfo,getmetatable,setmetatable,traceback")
  local string = require "string"
  function string.shout(s) return s:upper() .. "!" end -- a library adding to string, as in Lua
  assert(_G.string.shout("hi") == "HI!")
end)

test("a change to package.loaded's standard libraries reaches no script's own", function()
  package.loaded.string.rep = nil
  package.loaded._G.x_from_loaded = 1
  assert(string.rep("a", 2) == "aa" and x_from_loaded == nil)
  local M = require("lib.util") -- another script file: its own copies
  assert(M.toward)
end)

test("package.loaded is asked first, for the standard names too", function()
  local mine = {}
  package.loaded.string = mine
  assert(require("string") == mine, "package.loaded ignored")
end)
