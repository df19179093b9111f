-- string.rep (weft writes it by doubling): the same results, limits and
-- messages as Lua's, method calls included.
local cases = {{"ab", 0}, {"ab", 1}, {"ab", 2}, {"ab", 3, ","}, {"", 5, "-"}, {"x", 7, ""},
               {"abc", 10, "<>"}, {"q", 1, "sep"}, {"", 0}, {"z", -3}, {"é", 3, "·"}}
for _, c in ipairs(cases) do print(string.rep(c[1], c[2], c[3]), ("%q"):format(c[1]):rep(2)) end
print(#string.rep("x", 1000003, "yz"))
print(pcall(string.rep, "x", 1 << 40))
print(pcall(string.rep, "x", "a"))
print(pcall(string.rep))
print(pcall(string.rep, {}, 2))
local s = string.rep("ab", 100000, ",")
local h = 0
for i = 1, #s, 997 do h = (h * 31 + s:byte(i)) % 1000000007 end
print(h, #s, s:sub(1, 9), s:sub(-9))
