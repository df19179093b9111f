local name, file = ...
local beta = require('beta') -- found through the path alpha was found with
return {
  name = name,
  file = file,
  beta = beta,
  later = function() return require('late') end, -- a require after the load
}
