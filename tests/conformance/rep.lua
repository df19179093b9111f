-- string.rep: Lua's results for large counts and separators (in weft made
-- in pieces over frames, whole units a piece).
for _, c in ipairs{{"ab", 20 << 20, ","}, {"abc", 3e6, "--"}, {"x", 9 << 20}, {"0123456789", 1e6, "|"}, {string.rep("z", 9 << 20), 2, "!"}} do
  local s = string.rep(c[1], c[2], c[3])
  local h = 0
  for i = 1, #s, 4099 do h = (h * 31 + s:byte(i)) % 1000000007 end
  print(#s, h, s:sub(-13))
end
