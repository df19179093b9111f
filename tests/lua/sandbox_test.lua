-- The sandbox: what a script can and cannot reach.

local function keys(t)
  local ks = {}
  for k in pairs(t) do ks[#ks + 1] = tostring(k) end
  table.sort(ks)
  return table.concat(ks, ",")
end

test("os offers only clock, time and date", function()
  assert(keys(os) == "clock,date,time", "os has " .. keys(os))
  assert(type(os.clock()) == "number", "os.clock broken")
  assert(math.type(os.time()) == "integer", "os.time broken")
  assert(type(os.date("%Y")) == "string", "os.date broken")
  assert(os.execute == nil and os.exit == nil and os.getenv == nil and os.remove == nil,
    "dangerous os functions reachable")
end)

test("io writes nothing and runs nothing; loadfile and dofile reach the scripts root alone", function()
  assert(io.popen and not pcall(io.popen, "ls"), "io.popen ran")
  assert(io.open("scripts/x.lua", "w") == nil, "io.open wrote")
  assert(io.open("scripts/x.lua", "a+") == nil, "io.open appended")
  assert(not pcall(io.output, "out.txt"), "io.output opened a file")
  assert(not pcall(io.tmpfile), "io.tmpfile made a file")
  assert(io.open("/etc/passwd") == nil, "io.open read outside the roots")
  assert(io.open("scripts/../README.md") == nil, "io.open left the root")
  assert(loadfile("/etc/passwd") == nil and loadfile("scripts/../x.lua") == nil, "loadfile left the root")
  assert(not pcall(dofile, "/etc/passwd"), "dofile left the root")
  assert(io.open("scripts/main.lua"):read("l") ~= nil, "io.open does not read the scripts root")
end)

test("package.loadlib is not reachable", function()
  assert(package == nil or package.loadlib == nil, "package.loadlib is reachable")
end)

test("debug.setmetatable changes a script's tables alone", function()
  local prot = setmetatable({}, {__metatable = "locked"})
  local mt = {}
  assert(debug.setmetatable(prot, mt) == prot and debug.getmetatable(prot) == mt,
    "debug.setmetatable stops at __metatable")
  local ok, err = pcall(debug.setmetatable, "", {})
  assert(not ok and err:find("table expected, got string", 1, true), tostring(err))
  ok, err = pcall(debug.setmetatable, 1, nil)
  assert(not ok and err:find("table expected, got number", 1, true), tostring(err))
  -- The host's convention: a metatable with __metatable = false is shared.
  local shared = setmetatable({}, {__metatable = false})
  ok, err = pcall(debug.setmetatable, shared, {})
  assert(not ok and err:find("cannot change a protected metatable", 1, true), tostring(err))
end)

test("debug offers introspection and no more", function()
  assert(keys(debug) == "getinfo,getmetatable,setmetatable,traceback", "debug has " .. keys(debug))
  assert(type(debug.traceback()) == "string", "debug.traceback broken")
  assert(debug.getinfo(1, "S").short_src == "tests/lua/sandbox_test.lua", "debug.getinfo broken")
  local mt = {__metatable = "locked"}
  assert(debug.getmetatable(setmetatable({}, mt)) == mt, "debug.getmetatable honours __metatable")
  assert(debug.getmetatable("") == false, "the string metatable is reachable")
  local function weft_frames_hidden()
    for level = 1, 20 do
      local info = debug.getinfo(level, "Sf")
      if not info then return true end
      if info.what == "C" and info.func then return false end
    end
    return true
  end
  assert(weft_frames_hidden(), "debug.getinfo gave a C function of the stack")
end)

test("string.dump is not reachable", function()
  assert(string.dump == nil, "string.dump is reachable")
end)

test("string.dump is not reachable through the string metatable", function()
  assert(("").dump == nil, '("").dump is reachable')
  local mt = getmetatable("")
  local idx = type(mt) == "table" and rawget(mt, "__index")
  assert(type(idx) ~= "table" or rawget(idx, "dump") == nil,
    "getmetatable('').__index.dump is reachable")
end)

test("string methods still work on string values", function()
  assert(("abc"):upper() == "ABC", "s:upper() broken")
  assert(("%d"):format(5) == "5", "s:format() broken")
  assert(string.rep("ab", 3) == "ababab", "string.rep broken")
end)

test("load compiles text chunks", function()
  local f = load("return 1 + 1")
  assert(type(f) == "function", "load failed: " .. tostring(f))
  assert(f() == 2, "chunk returned " .. tostring(f()))
  local g = load("return x", "chunk", "t", {x = 7})
  assert(g() == 7, "env argument ignored")
end)

test("load takes Lua's modes: 'bt' loads text, 'b' refuses it with Lua's message", function()
  assert(load("return 1", "chunk", "bt")() == 1, "mode 'bt' refused a text chunk")
  local f, msg = load("return 1", "chunk", "b")
  assert(f == nil and msg == "attempt to load a text chunk (mode is 'b')", tostring(msg))
end)

test("load refuses a binary chunk, from a string or a reader function", function()
  local bin = "\27LuaT\0\25\147\r\n\26\n\4\8\8xV\0\0\0\0\0\0\0\0\0\0\0(w@\1"
  local f, msg = load(bin)
  assert(f == nil and msg:match("binary chunks are not available"), "message " .. tostring(msg))
  local parts = {bin:sub(1, 3), bin:sub(4)}
  f, msg = load(function() return table.remove(parts, 1) end)
  assert(f == nil and msg:match("binary chunks are not available"), "message " .. tostring(msg))
  f, msg = load(bin, "c", "t") -- without 'b' in the mode it is Lua's own refusal
  assert(f == nil and msg == "attempt to load a binary chunk (mode is 't')", tostring(msg))
end)

test("load reports a syntax error instead of raising", function()
  local f, msg = load("return +", "=bad")
  assert(f == nil, "bad chunk compiled")
  assert(tostring(msg):match("bad:1:"), "message " .. tostring(msg))
end)

test("require of a missing module gives a clear error", function()
  local ok, err = pcall(require, "no.such.module")
  assert(not ok, "require succeeded")
  assert(tostring(err):match("no%.such%.module"), "error does not name the module: " .. tostring(err))
  assert(tostring(err):match("not found"), "error does not say not found: " .. tostring(err))
end)

test("require error names the caller's line", function()
  local ok, err = pcall(function() require("no.such.module") end)
  assert(not ok, "require succeeded")
  assert(tostring(err):match("sandbox_test%.lua:%d+:"), "error has no file:line: " .. tostring(err))
end)

test("require cannot reach system modules", function()
  for _, name in ipairs{"socket", "lfs", "ffi", "jit"} do
    local ok, mod = pcall(require, name)
    assert(not ok, "require('" .. name .. "') succeeded")
  end
end)

test("require rejects paths that leave the scripts root", function()
  for _, name in ipairs{"../secret", "/etc/passwd", "..x", "a..b", ""} do
    local ok, err = pcall(require, name)
    assert(not ok, "require('" .. name .. "') succeeded")
  end
end)

test("collectgarbage offers count", function()
  local c = collectgarbage("count")
  assert(type(c) == "number" and c > 0, "count " .. tostring(c))
end)

test("global writes stay in the script's environment", function()
  some_global_from_a_test = 1
  assert(some_global_from_a_test == 1, "global write lost")
  assert(_G.some_global_from_a_test == 1, "_G is not the environment")
end)

test("os.date formats a format of many conversions in pieces: preempted, it goes on next frame", function()
  assert(os.date("!%Y-%m-%d", 0) == "1970-01-01", "an ordinary format is Lua's")
  local f0 = frame()
  local s = os.date("!" .. ("%Y"):rep(400000), 0)
  assert(#s == 4 * 400000 and s:sub(1, 8) == "19701970" and frame() > f0, "pieces: " .. frame() - f0)
  local ok, err = pcall(os.date, ("%Y"):rep(5000) .. "%Ez")
  assert(not ok and err:find("invalid conversion specifier '%Ez'", 1, true), err)
  assert(type(os.date("*t")) == "table" and os.date(5) == "5", "tables and non-formats as Lua's")
end)

test("table.move and table.concat over long ranges run in pieces: preempted, they go on next frame", function()
  -- six million nils moved, six million reads through an __index that is a C function:
  -- C work no instruction count sees, done in pieces, the task yielding between two
  local f0 = frame()
  local dst = table.move({}, 1, 6e6, 1, {})
  assert(next(dst) == nil and frame() > f0, "the move did not go on over frames: " .. frame() - f0)
  f0 = frame()
  local s = table.concat(setmetatable({}, {__index = rawlen}), "", 1, 6e6)
  assert(#s == 6e6 and s:sub(1, 3) == "000" and frame() > f0, "the concat: " .. #s .. ", " .. frame() - f0)
  -- short ones as Lua's, in one go
  f0 = frame()
  assert(table.concat(table.move({1, 2, 3}, 1, 3, 2), ",") == "1,1,2,3")
  assert(table.concat(setmetatable({}, {__index = function(_, i) return i end}), ",", 1, 3) == "1,2,3")
  assert(frame() == f0)
end)

test("a long table.move inside a coroutine or a pcall runs on: only a runaway would be killed", function()
  local co = coroutine.wrap(function() return table.move({}, 1, 6e6, 2, {1})[1] end)
  assert(co() == 1)
  local ok, n = pcall(function() return #table.concat(setmetatable({}, {__index = rawlen}), "", 1, 6e6) end)
  assert(ok and n == 6e6, tostring(n))
end)

test("a read file's seek past either end of a 64-bit position fails as fseek does; reads stay in the file", function()
  local f = io.open("scripts/main.lua")
  local size = f:seek("end")
  assert(size > 0, "no size")
  local at, msg = f:seek("end", math.maxinteger)
  assert(at == nil and msg == "Invalid argument", "seek past the largest position: " .. tostring(at))
  at, msg = f:seek("cur", math.mininteger)
  assert(at == nil and msg == "Invalid argument", "seek before 0: " .. tostring(at))
  assert(f:seek("set", math.maxinteger) == math.maxinteger, "seek far past the end refused")
  assert(f:read(5) == nil, "a read past the end read something")
  assert(f:read("a") == "", "read('a') past the end")
  assert(f:seek("set", 0) == 0 and f:read(2) == io.open("scripts/main.lua"):read(2), "seek back to 0")
  f:close()
end)
