#!/usr/bin/env lua
-- Files as executables start them: a first line starting with '#' (a
-- "#!" line) and a UTF-8 byte-order mark are skipped by every file load
-- (the main script, require, loadfile, dofile), line numbers kept.
print('main', debug.getinfo(1, 'l').currentline)
local tool, where = require('tool')
print(tool.name, tool.line, where)
print(dofile('bom.lua'))
local f, err = loadfile('comment_only.lua')
print(type(f), err, f and select('#', f()))
local ok, msg = pcall(dofile, 'broken.lua')
print(ok, msg)
print(select(2, loadfile('bad_syntax.lua')))
print(load('#!x\nreturn 1'))
