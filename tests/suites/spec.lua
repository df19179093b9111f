-- A small runner for busted-style spec files: describe/it and their hooks,
-- written for weft's test-suites (tests/suites/run.sh), with luassert (the
-- assertion library busted uses, fetched from Debian beside the suites)
-- for assert, spy, stub, mock and match. Plain Lua 5.4: the same file runs
-- under lua5.4 and as `weft run`'s main script. busted itself cannot run
-- in weft: it needs C modules (luasystem, lua-term, and LuaFileSystem
-- through Penlight's pl.path and pl.dir), reads the environment and ends
-- with os.exit; and Debian's archive here does not give its source.
-- Usage, from a package's directory: lua5.4 _suite/spec.lua SPEC...
-- Prints a record a test (`ok NAME`, or `FAIL NAME: message` with the
-- message's further lines indented), then a summary.

local files = { ... }
-- The same search in both: the runner's libraries, then the package's
-- directory; no system directories and no C modules.
package.path = "./_suite/?.lua;./_suite/?/init.lua;./?.lua;./?/init.lua"
package.cpath = ""
-- busted -c loads luacov; coverage is not what is measured here.
package.preload.luacov = function() return true end

local luassert = require "luassert"
assert = luassert
spy = require "luassert.spy"
stub = require "luassert.stub"
mock = require "luassert.mock"
match = require "luassert.match"

-- In weft, each test starts in a frame of its own (wait is weft's).
local next_frame = rawget(_G, "wait")

local passed, failed, pending_count = 0, 0, 0
local names = {}       -- describe names from the outside in
local current          -- the block being collected
local finallies        -- finally() callbacks of the running test

local function new_block(name, fn)
  return { name = name, fn = fn, children = {}, setup = {}, teardown = {},
           before = {}, after = {} }
end

local function add(kind, name, fn)
  if not current then error(kind .. " outside a describe or file", 3) end
  table.insert(current.children, { kind = kind, name = name, fn = fn })
end

local function message(err)
  if type(err) == "table" and getmetatable(err) and getmetatable(err).__tostring then
    return tostring(err)
  elseif type(err) == "table" and err.message then
    return tostring(err.message)
  end
  return tostring(err)
end

local function fullname(name)
  local parts = {}
  for i = 1, #names do parts[i] = names[i] end
  parts[#parts + 1] = name
  return table.concat(parts, " ")
end

local function report(ok, name, err)
  if ok then
    passed = passed + 1
    print("ok " .. fullname(name))
  else
    failed = failed + 1
    -- The message's own lines indented: one record a test.
    print("FAIL " .. fullname(name) .. ": " .. (message(err):gsub("\n", "\n  ")))
  end
end

-- Runs hooks in order; the first error stops them and is returned.
local function run_hooks(list)
  for _, fn in ipairs(list) do
    local ok, err = pcall(fn)
    if not ok then return false, err end
  end
  return true
end

local run_block

-- befores: the before_each lists from the outside in; afters likewise.
local function run_test(test, befores, afters)
  if next_frame then next_frame(0) end
  finallies = {}
  local snapshot = luassert:snapshot()
  local ok, err = true, nil
  for _, list in ipairs(befores) do
    ok, err = run_hooks(list)
    if not ok then break end
  end
  if ok then ok, err = pcall(test.fn) end
  for i = #afters, 1, -1 do
    local aok, aerr = run_hooks(afters[i])
    if ok and not aok then ok, err = aok, aerr end
  end
  for i = #finallies, 1, -1 do
    local fok, ferr = pcall(finallies[i])
    if ok and not fok then ok, err = fok, ferr end
  end
  finallies = nil
  snapshot:revert()
  report(ok, test.name, err)
end

-- Collects a block's children by running its function, then runs them:
-- setup, each child (tests with every enclosing before_each/after_each),
-- teardown. An error while collecting or in setup fails the block.
run_block = function(block, befores, afters)
  local outer = current
  current = block
  local ok, err = true, nil
  if block.fn then ok, err = pcall(block.fn) end
  current = outer
  if not ok then report(false, "(describe)", err); return end
  ok, err = run_hooks(block.setup)
  if not ok then report(false, "(setup)", err); return end
  local b, a = { table.unpack(befores) }, { table.unpack(afters) }
  b[#b + 1], a[#a + 1] = block.before, block.after
  for _, child in ipairs(block.children) do
    if child.kind == "it" then
      run_test(child, b, a)
    elseif child.kind == "pending" then
      pending_count = pending_count + 1
      print("pending " .. fullname(child.name))
    else
      names[#names + 1] = child.name
      run_block(new_block(child.name, child.fn), b, a)
      names[#names] = nil
    end
  end
  ok, err = run_hooks(block.teardown)
  if not ok then report(false, "(teardown)", err) end
end

function describe(name, fn) add("describe", name, fn) end
context, insulate, expose = describe, describe, describe
function it(name, fn)
  if fn == nil then add("pending", name) else add("it", name, fn) end
end
spec, test = it, it
function pending(name) add("pending", name or "") end
local function hook(field)
  return function(fn)
    if not current then error(field .. " outside a describe", 2) end
    table.insert(current[field], fn)
  end
end
setup, teardown = hook("setup"), hook("teardown")
lazy_setup, lazy_teardown = setup, teardown
strict_setup, strict_teardown = setup, teardown
before_each, after_each = hook("before"), hook("after")
function finally(fn)
  if not finallies then error("finally outside a test", 2) end
  finallies[#finallies + 1] = fn
end
function randomize() end

for _, file in ipairs(files) do
  local chunk, err = loadfile(file)
  local root = new_block(file, chunk)
  if not chunk then
    report(false, "(load)", err)
  else
    run_block(root, {}, {})
  end
end
print(string.format("%d passed, %d failed, %d pending", passed, failed, pending_count))
