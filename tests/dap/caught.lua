local ok, err = pcall(function()
  local secret = 42
  error("caught one")
end)
print("after", ok, err)
local ok2 = xpcall(function() local x = nil; return x.field end, function(e) return "handled: " .. e end)
print("after xpcall", ok2)
