-- A package whose init.lua reads package.config and loads a sibling.
local name, path = ...
local lines = {}
for l in package.config:gmatch('[^\n]+') do lines[#lines + 1] = l end
local M = {name = name, path = path, dirsep = lines[1], pathsep = lines[2], mark = lines[3],
           execdir = lines[4], ignore = lines[5]}
M.defaults = require(name .. '.defaults')
return M
