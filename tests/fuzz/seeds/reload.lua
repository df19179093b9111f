local e = persist("e", {})
local t = weft.start("module", e)
wait(0.3)
print(e.n, weft.modules()[1].version, t.status)
