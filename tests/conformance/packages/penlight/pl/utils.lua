-- Penlight's utils shape: it takes io.stdout at load and writes through it.
local compat = require 'pl.compat'
local stdout, stderr, write = io.stdout, io.stderr, io.write
local format = string.format

local utils = {_VERSION = '1.0', dir_separator = compat.dir_separator}
utils.pack, utils.unpack = compat.pack, compat.unpack

function utils.printf(fmt, ...) write(format(fmt, ...)) end
function utils.fprintf(f, fmt, ...) f:write(format(fmt, ...)) end
function utils.say(...) stdout:write(table.concat({...}, ' '), '\n') end

function utils.assert_arg(n, val, tp)
  if type(val) ~= tp then
    error(("argument %d expected a '%s', got a '%s'"):format(n, tp, type(val)), 3)
  end
  return val
end

function utils.split(s, re, plain, n)
  local i1, ls = 1, {}
  re = re or '%s+'
  while true do
    local i2, i3 = s:find(re, i1, plain)
    if not i2 or (n and #ls == n - 1) then
      ls[#ls + 1] = s:sub(i1)
      return ls
    end
    ls[#ls + 1] = s:sub(i1, i2 - 1)
    i1 = i3 + 1
  end
end

function utils.memoize(f)
  local cache = {}
  return function(k)
    local v = cache[k]
    if v == nil then v = f(k); cache[k] = v end
    return v
  end
end

function utils.is_type(obj, tp)
  if type(tp) == 'string' then return type(obj) == tp end
  return getmetatable(obj) == tp
end

function utils.readfile(path)
  local f, err = io.open(path, 'r')
  if not f then return nil, err end
  local s = f:read('a')
  f:close()
  return s
end

utils.stdout_type = io.type(stdout)
utils.stderr_type = io.type(stderr)
return utils
