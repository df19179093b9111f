# first
local x = = 1
