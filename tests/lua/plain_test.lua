-- What plain Lua libraries look for is where they look: warn, the
-- standard libraries in package.loaded, io.open's and loadfile's
-- failures as values (Penlight, lume and json.lua suites run unchanged).

test("warn is Lua's: at least one piece, every piece a string (numbers too)", function()
  assert(type(warn) == "function", "no warn")
  local ok, err = pcall(warn)
  assert(not ok and err == "bad argument #1 to 'warn' (string expected, got no value)", err)
  ok, err = pcall(warn, "a", {})
  assert(not ok and err == "bad argument #2 to 'warn' (string expected, got table)", err)
  warn("@on")
  warn("low ", "fuel: ", 3)
  warn("@off")
  warn("@unknown control")
end)
