-- ai/sentry.lua with a typo (tests/demo/live/brain_load.lua).
local patrol = require("ai.patrol")

local M = {}
M.SWEEP = = 60
return M
