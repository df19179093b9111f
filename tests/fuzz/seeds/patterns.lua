local s = ("ab(c)d"):rep(50) .. "%x[y]z"
for _, p in ipairs{"%b()", "%f[%a]%a+", "(a)(b)%2", "[%a-z]+", "[^%s]-", "^(.-)$", "()a()", "%d+%s*", "[]]", "[a-]", "x?y*z+w-"} do
  pcall(string.find, s, p)
  pcall(string.match, s, p, 3)
  pcall(string.gsub, s, p, "%0%1")
  pcall(function() for a in s:gmatch(p) do end end)
end
