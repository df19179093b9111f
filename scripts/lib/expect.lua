-- Assertions for script tests (tests/lua/): errors raised at the
-- caller's line.
local M = {}

-- The line that called here().
function M.here()
  return tonumber(select(2, pcall(error, "", 3)):match(":(%d+):"))
end

-- Calls fn, which must raise a string error naming the calling file at
-- `line` and matching `pat` (lower-cased, a Lua pattern). Call it as
-- raises(here(), function() <bad call> end, pat) with the bad call on that
-- same line. Returns the error.
function M.raises(line, fn, pat)
  local file = select(2, pcall(error, "", 3)):match("^(.-):%d+:")
  local ok, err = pcall(fn)
  assert(not ok, "no error raised (line " .. tostring(line) .. ")")
  assert(type(err) == "string", "error is a " .. type(err) .. ": " .. tostring(err))
  local where = file .. ":" .. line .. ":"
  assert(err:find(where, 1, true), "error does not name " .. where .. " " .. err)
  assert(err:lower():match(pat), "error does not say '" .. pat .. "': " .. err)
  return err
end

-- Waits until task t has ended (a runaway is killed only after it has run
-- desc.runaway_us of script time: many frames of preemption) or `frames`
-- frames have passed (default 2,000); returns its status.
function M.ended(t, frames)
  for _ = 1, frames or 2000 do
    if t.status ~= "waiting" and t.status ~= "running" then break end
    wait()
  end
  return t.status
end

return M
