-- A Penlight-shaped package: `require 'pl'` loads this file, which loads
-- its submodules lazily, the first time a field names one.
local modname, path = ...
local pl = {_NAME = modname, _PATH = path:match('[^/]+/[^/]+$')}
local known = {compat = true, utils = true, List = true, stringx = true, tablex = true}
return setmetatable(pl, {
  __index = function(t, name)
    if not known[name] then error("pl has no module '" .. tostring(name) .. "'", 2) end
    local m = require('pl.' .. name)
    rawset(t, name, m)
    return m
  end,
})
