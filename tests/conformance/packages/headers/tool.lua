#!/usr/bin/lua5.4 -W
-- a module with a mark and a "#!" line
return {name = "tool", line = debug.getinfo(1, "l").currentline}
