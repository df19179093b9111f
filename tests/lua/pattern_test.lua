-- String patterns are guarded: a search that would backtrack too long
-- fails at the caller's line instead of stalling the frame; everything
-- else behaves exactly as Lua's own functions (which do the real work).

local function here() return debug.traceback("", 2):match(":(%d+):") end

test("a pathological find fails at the caller's line instead of stalling", function()
  local subject = ("a"):rep(20000)
  local line
  local ok, err = pcall(function() line = here(); return subject:find(".-.-.-.-b") end)
  assert(not ok, "the search ran")
  assert(err:match("too costly"), err)
  assert(err:match("pattern_test%.lua:" .. line .. ":"), "no caller line: " .. err)
end)

test("backtracking between classes is guarded too", function()
  local ok, err = pcall(string.match, ("1"):rep(3000), "%d+%s*%d+x")
  assert(not ok and err:match("too costly"), tostring(err))
end)

test("gsub and gmatch are guarded", function()
  local s = ("ab"):rep(5000)
  assert(not pcall(string.gsub, s, "(.-)(.-)(.-)z", "x"))
  assert(not pcall(string.gmatch, s, ".-.-.-z"))
end)

test("ordinary patterns give Lua's results", function()
  assert(select(1, ("hello world"):find("o w")) == 5)
  local a, b = ("hello world"):match("(%w+) (%w+)")
  assert(a == "hello" and b == "world")
  local kv = {}
  for k, v in ("a=1, b=2"):gmatch("(%w+)=(%w+)") do kv[k] = v end
  assert(kv.a == "1" and kv.b == "2")
  assert(("f(a(b)c)d"):match("%b()") == "(a(b)c)")
  local s, e = ("THE (quick) fox"):find("%f[%a]%a+", 5)
  assert(s == 6 and e == 10)
  assert(("hello"):gsub("l+", "L") == "heLo")
  assert(("abc"):gsub("", "-") == "-a-b-c-")
  local q, body = ("x = 'a'"):match("(['\"])(.-)%1")
  assert(q == "'" and body == "a")
  assert(("  trim  "):match("^%s*(.-)%s*$") == "trim")
  assert(("2024-01-02"):match("^(%d+)-(%d+)-(%d+)$") == "2024")
  local p1, p2 = ("hello"):match("()ll()")
  assert(p1 == 3 and p2 == 5)
end)

test("long subjects with simple patterns are not refused", function()
  local big = ("word "):rep(50000)
  local n = 0
  for _ in big:gmatch("%a+") do n = n + 1 end
  assert(n == 50000)
  local _, count = big:gsub("%a+", "%0")
  assert(count == 50000)
  assert(big:find("word", 1, true) == 1)
  local lines = ("line\n"):rep(20000)
  local k = 0
  for l in lines:gmatch("[^\n]+") do k = k + 1 end
  assert(k == 20000)
end)

test("malformed patterns keep Lua's messages", function()
  local ok, err = pcall(string.find, "abc", "[a")
  assert(not ok and err:match("missing ']'"), err)
  ok, err = pcall(string.match, "abc", "%")
  assert(not ok and err:match("ends with '%%'"), err)
  ok, err = pcall(string.match, "abc", "(a")
  assert(not ok and err:match("unfinished capture"), err)
end)

test("a plain find is never refused", function()
  local s = ("a"):rep(100000) .. ".-.-b"
  assert(s:find(".-.-b", 1, true) == 100001)
end)

test("gsub and gmatch of a plain pattern over a huge subject are guarded: they try every position", function()
  local huge = ("ab"):rep(3e6) -- 6 MB: more positions than the search may take steps
  local ok, err = pcall(string.gsub, huge, "a", "xyz")
  assert(not ok and err:match("too costly for this subject %(6000000 bytes%)"), tostring(err))
  assert(not pcall(string.gmatch, huge, "b"))
  -- find and match stop at the first match: not refused, Lua's results
  assert(huge:find("ba") == 2 and huge:match("ab") == "ab")
  assert(select(2, ("ab"):rep(1000):gsub("a", "x")) == 1000, "a small subject is Lua's")
end)
