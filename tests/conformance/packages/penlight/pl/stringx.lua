local stringx = {}
function stringx.strip(s) return (s:gsub('^%s+', ''):gsub('%s+$', '')) end
function stringx.startswith(s, p) return s:sub(1, #p) == p end
function stringx.endswith(s, p) return #p == 0 or s:sub(-#p) == p end
function stringx.lines(s) return s:gmatch('[^\n]*') end
function stringx.rjust(s, w, ch) return (ch or ' '):rep(w - #s) .. s end
return stringx
