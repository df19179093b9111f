local tablex = {}
function tablex.keys(t) local r = {} for k in pairs(t) do r[#r + 1] = k end table.sort(r, function(a, b) return tostring(a) < tostring(b) end) return r end
function tablex.deepcompare(a, b)
  if type(a) ~= type(b) then return false end
  if type(a) ~= 'table' then return a == b end
  for k, v in pairs(a) do if not tablex.deepcompare(v, b[k]) then return false end end
  for k in pairs(b) do if a[k] == nil then return false end end
  return true
end
return tablex
