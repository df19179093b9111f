-- os.date: Lua's results and errors for long formats (in weft formatted in
-- pieces of 4,096 conversions, each %c, %Ec or %Oc whole, the '!' kept).
local function show(...) local t = table.pack(...) for i = 1, t.n do t[i] = tostring(t[i]) end print(table.concat(t, " ")) end
local f = ("%Y-%m-%d %H:%M:%S|"):rep(3000)
local s = os.date("!" .. f, 86400 * 365)
show(#s, s:sub(1, 40), s:sub(-21))
show(#os.date(("%Ey%Od%%"):rep(5000), 0))
show(pcall(os.date, ("%Y"):rep(5000) .. "%Ez", 0))
show(pcall(os.date, ("%Y"):rep(5000) .. "%", 0))
show(os.date("!%c", 0), os.date("!*t", 3600).hour)
show(pcall(os.date, ("%Y"):rep(9000), "x"))
