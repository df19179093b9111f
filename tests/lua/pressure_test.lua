-- Memory pressure fails early and once: near the heap's limit a spawn
-- raises in the spawner before a child exists, and the garbage a task
-- that died for memory leaves is collected by the host over the next
-- frames without anyone asking.

local function capture()
  local got = {}
  weft.on_error(function(err) got[#got + 1] = tostring(err) end)
  return got
end

-- Fills the heap with 4 MB strings until one more does not fit.
local function fill(hoard)
  local s = string.rep("x", 1 << 22)
  while pcall(function() hoard[#hoard + 1] = s .. #hoard end) do end
end

test("near the heap's limit spawn raises in the spawner; no child fails on its own", function()
  local got = capture()
  local hoard = {}
  fill(hoard)
  local kids = {}
  local ok, err = pcall(function()
    for i = 1, 1e6 do kids[i] = spawn(function() wait(math.huge) end) end
  end)
  assert(not ok and tostring(err):match("not enough memory"), "spawn loop: " .. tostring(err))
  assert(tostring(err):match("pressure_test%.lua:%d+:"), "not at the spawner's line: " .. tostring(err))
  assert(#got == 0, #got .. " task(s) failed on their own: " .. tostring(got[1]))
  for _, k in ipairs(kids) do
    assert(k.status == "waiting", "a child is " .. k.status)
    k:cancel()
  end
  hoard = nil
  kids = nil
  wait()
  local t = spawn(function() return 1 end)
  assert(t.status == "done", "cannot spawn once the memory is back")
end)

test("a spawn bomb ends at its first failing spawn, with one report per spawner", function()
  local got = capture()
  local hoard = {}
  fill(hoard)
  for _ = 1, 6 do hoard[#hoard] = nil end -- some room to spawn into
  for _ = 1, 2 do
    spawn(function()
      for _ = 1, 1e6 do spawn(function() wait(1e9) end) end
    end)
  end
  assert(#got == 2, #got .. " reports")
  for _, e in ipairs(got) do assert(e:match("not enough memory"), e) end
  hoard = nil
  wait()
end)

test("after a task dies for memory the heap comes down by itself within frames", function()
  capture()
  local base = collectgarbage("count")
  local hog = spawn(function()
    local hoard = {}
    local s = string.rep("y", 1 << 22)
    for i = 1, 1e6 do hoard[i] = s .. i end
  end)
  assert(hog.status == "failed", hog.status)
  local high = collectgarbage("count")
  assert(high > base + 100 * 1024, string.format("the hog held only %.0f KB", high - base))
  for _ = 1, 120 do
    wait()
    if collectgarbage("count") < base + 16 * 1024 then break end
  end
  local now = collectgarbage("count")
  assert(now < base + 16 * 1024,
    string.format("the heap stayed at %.0f MB (%.0f MB before the hog)", now / 1024, base / 1024))
end, {frames = 200})
