-- Channels: order, capacity, hand-over, close, try_*, #ch, cancellation.

local function resumes(t)
  for _, info in ipairs(weft.tasks()) do
    if info.task == t then return info.resumes end
  end
  error("task not listed by weft.tasks()", 2)
end

local function info_of(t)
  for _, info in ipairs(weft.tasks()) do
    if info.task == t then return info end
  end
end

-- ---- order ----

test("values come out in the order they went in", function()
  local ch = channel()
  for i = 1, 20 do ch:send(i) end
  for i = 1, 20 do
    local v = ch:recv()
    assert(v == i, "recv " .. i .. " got " .. tostring(v))
  end
end)

test("a bounded channel keeps FIFO order while senders wait and the buffer wraps", function()
  local ch = channel(3)
  spawn(function()
    for i = 1, 50 do ch:send(i) end
    ch:close()
  end)
  local got = {}
  while true do
    local v = ch:recv()
    if v == nil then break end
    got[#got + 1] = v
    if v % 7 == 0 then wait() end -- let the sender fill up again
  end
  assert(#got == 50, "got " .. #got)
  for i = 1, 50 do assert(got[i] == i, "position " .. i .. " is " .. tostring(got[i])) end
end)

test("recv waits for a value, then returns it", function()
  local ch = channel()
  local got, at
  local t = spawn(function() got = ch:recv() at = frame() end)
  wait(0.5)
  assert(t.status == "waiting" and got == nil, "recv returned early")
  local sent = frame()
  ch:send({name = "x"})
  wait(t)
  assert(type(got) == "table" and got.name == "x", "got " .. tostring(got))
  assert(at == sent, "received in frame " .. tostring(at) .. ", sent in " .. sent)
end)

test("a table sent through a channel arrives as the same table", function()
  local ch = channel()
  local v = {}
  ch:send(v)
  assert(rawequal(ch:recv(), v))
end)

test("waiting receivers get values in the order they began waiting", function()
  local ch = channel()
  local got = {}
  local ts = {}
  for i = 1, 3 do ts[i] = spawn(function() got[i] = ch:recv() end) end
  ch:send("a")
  ch:send("b")
  ch:send("c")
  wait(ts)
  assert(got[1] == "a" and got[2] == "b" and got[3] == "c",
    "got " .. tostring(got[1]) .. tostring(got[2]) .. tostring(got[3]))
end)

-- Receivers resume in scheduler order, so across receivers the log order is
-- not the dequeue order; each receiver must see each sender's values in order.
test("many senders and many receivers: every value delivered once, FIFO per sender", function()
  local ch = channel(3)
  local SENDERS, PER, RECEIVERS = 5, 40, 4
  local log = {}
  local senders = {}
  for s = 1, SENDERS do
    senders[s] = spawn(function()
      for i = 1, PER do
        ch:send({s = s, i = i})
        if (i + s) % 5 == 0 then wait() end
      end
    end)
  end
  local receivers = {}
  for r = 1, RECEIVERS do
    receivers[r] = spawn(function()
      local n = 0
      while true do
        local v, why = ch:recv()
        if v == nil then
          assert(why == "closed", "why " .. tostring(why))
          return n
        end
        v.r = r
        log[#log + 1] = v
        n = n + 1
        if (n + r) % 3 == 0 then wait() end
      end
    end)
  end
  wait(senders)
  ch:close()
  local counts = {wait(receivers)}
  assert(#log == SENDERS * PER, "received " .. #log .. " values")
  local seen, last = {}, {}
  for _, v in ipairs(log) do
    local key = v.s * 1000 + v.i
    assert(not seen[key], "value " .. v.s .. "/" .. v.i .. " delivered twice")
    seen[key] = true
    local lk = v.r * 1000 + v.s
    assert(v.i > (last[lk] or 0),
      "receiver " .. v.r .. " got sender " .. v.s .. "'s " .. v.i .. " after " .. tostring(last[lk]))
    last[lk] = v.i
  end
  for s = 1, SENDERS do
    for i = 1, PER do assert(seen[s * 1000 + i], "value " .. s .. "/" .. i .. " lost") end
  end
  local total = 0
  for r = 1, RECEIVERS do total = total + counts[r] end
  assert(total == SENDERS * PER, "receivers counted " .. total)
  local used = 0
  for r = 1, RECEIVERS do if counts[r] > 0 then used = used + 1 end end
  assert(used > 1, "only one receiver got values")
end)

-- ---- capacity ----

test("a bounded send waits while the channel is full", function()
  local ch = channel(2)
  local sent = 0
  local t = spawn(function()
    for i = 1, 3 do
      ch:send(i)
      sent = i
    end
  end)
  assert(sent == 2, "sent " .. sent .. " before waiting")
  assert(t.status == "waiting", "status " .. t.status)
  assert(#ch == 2, "#ch " .. #ch)
  wait(0.25)
  assert(sent == 2, "the sender went on while full")
  assert(ch:recv() == 1)
  wait(t)
  assert(sent == 3, "sent " .. sent)
  assert(ch:recv() == 2 and ch:recv() == 3)
end)

test("waiting senders resume in the order they began waiting", function()
  local ch = channel(1)
  ch:send("first")
  local order = {}
  local ts = {}
  for i = 1, 3 do
    ts[i] = spawn(function()
      ch:send(i)
      order[#order + 1] = i
    end)
  end
  local got = {}
  for _ = 1, 4 do got[#got + 1] = ch:recv() end
  wait(ts)
  assert(table.concat(got, ",") == "first,1,2,3", "received " .. table.concat(got, ","))
  assert(table.concat(order, ",") == "1,2,3", "senders resumed " .. table.concat(order, ","))
end)

test("an unbounded channel never makes send wait", function()
  local ch = channel()
  wait()
  local me, fr = current(), frame()
  local r = resumes(me)
  for i = 1, 5000 do ch:send(i) end
  assert(frame() == fr and resumes(me) == r, "send yielded")
  assert(#ch == 5000, "#ch " .. #ch)
  assert(ch.capacity == nil, "capacity " .. tostring(ch.capacity))
  local ok = ch:try_send(1)
  assert(ok == true)
end)

test("channel(0) hands each value from a waiting sender to a receiver", function()
  local ch = channel(0)
  local done_at
  local t = spawn(function()
    ch:send("v")
    done_at = frame()
  end)
  assert(t.status == "waiting", "send on channel(0) returned without a receiver")
  assert(#ch == 0, "#ch " .. #ch)
  wait(0.25)
  assert(done_at == nil)
  local at = frame()
  assert(ch:recv() == "v")
  wait(t)
  assert(done_at == at, "sender resumed in frame " .. tostring(done_at) .. ", taken in " .. at)
end)

test("channel(0) send to a waiting receiver returns at once", function()
  local ch = channel(0)
  local got
  local r = spawn(function() got = ch:recv() end)
  wait()
  local me, fr = current(), frame()
  local n = resumes(me)
  ch:send(5)
  assert(frame() == fr and resumes(me) == n, "send waited with a receiver ready")
  wait(r)
  assert(got == 5)
  assert(#ch == 0)
end)

test("channel(0) try_send without a receiver is full", function()
  local ch = channel(0)
  local ok, why = ch:try_send(1)
  assert(ok == false and why == "full", tostring(ok) .. " " .. tostring(why))
  assert(#ch == 0)
  assert(ch.capacity == 0)
end)

test("channel capacity must be a non-negative integer", function()
  assert(not pcall(channel, -1), "channel(-1) accepted")
  assert(not pcall(channel, "x"), "channel('x') accepted")
  assert(not pcall(channel, 1.5), "channel(1.5) accepted")
end)

-- ---- close ----

test("recv on a closed and drained channel returns nil, 'closed'", function()
  local ch = channel()
  ch:close()
  local v, why = ch:recv()
  assert(v == nil and why == "closed", tostring(v) .. " " .. tostring(why))
  v, why = ch:recv()
  assert(v == nil and why == "closed", "second recv: " .. tostring(why))
  assert(ch.closed == true)
end)

test("values sent before close are still delivered", function()
  local ch = channel(5)
  ch:send("a")
  ch:send("b")
  ch:close()
  assert(#ch == 2)
  local a = ch:recv()
  local b = ch:recv()
  local c, why = ch:recv()
  assert(a == "a" and b == "b", "got " .. tostring(a) .. tostring(b))
  assert(c == nil and why == "closed")
end)

test("close wakes blocked receivers with nil, 'closed'", function()
  local ch = channel()
  local got = {}
  local ts = {}
  for i = 1, 3 do
    ts[i] = spawn(function() got[i] = table.pack(ch:recv()) end)
  end
  wait(0.1)
  ch:close()
  wait(ts)
  for i = 1, 3 do
    assert(got[i].n == 2 and got[i][1] == nil and got[i][2] == "closed",
      "receiver " .. i .. " got " .. tostring(got[i][1]) .. ", " .. tostring(got[i][2]))
  end
end)

test("close makes blocked senders raise 'send on a closed channel' at their line", function()
  local ch = channel(1)
  ch:send(0)
  local results = {}
  local ts = {}
  for i = 1, 2 do
    ts[i] = spawn(function()
      local ok, err = pcall(function() ch:send(i) end) local _, mark = pcall(function() error("") end)
      results[i] = {ok = ok, err = err, where = mark:match("^(.-:%d+:)")}
    end)
  end
  assert(ts[1].status == "waiting" and ts[2].status == "waiting")
  ch:close()
  wait(ts)
  for i = 1, 2 do
    local r = results[i]
    assert(r.ok == false, "sender " .. i .. " did not raise")
    assert(r.err:find("send on a closed channel", 1, true), "error " .. r.err)
    assert(r.err:sub(1, #r.where) == r.where, "error " .. r.err .. " is not at " .. r.where)
  end
  -- the buffered value is still there; the blocked senders' values are not
  assert(ch:recv() == 0)
  local v, why = ch:recv()
  assert(v == nil and why == "closed", "got " .. tostring(v))
end)

test("a blocked sender that does not catch fails with the close error", function()
  weft.on_error(function() end)
  local ch = channel(0)
  local t = spawn(function() ch:send(1) end)
  ch:close()
  local ok, err = pcall(wait, t)
  assert(not ok and tostring(err):find("send on a closed channel", 1, true), tostring(err))
  assert(t.status == "failed", "status " .. t.status)
end)

test("send on a closed channel raises at the caller's line", function()
  local ch = channel()
  ch:close()
  local ok, err = pcall(function() ch:send(1) end) local _, mark = pcall(function() error("") end)
  local where = mark:match("^(.-:%d+:)")
  assert(not ok and err:find("send on a closed channel", 1, true), tostring(err))
  assert(err:sub(1, #where) == where, "error " .. err .. " is not at " .. where)
end)

-- ---- try_send / try_recv / #ch ----

test("try_send returns true, or false with 'full' or 'closed'", function()
  local ch = channel(1)
  local ok, why = ch:try_send("a")
  assert(ok == true and why == nil, "first try_send " .. tostring(ok) .. " " .. tostring(why))
  ok, why = ch:try_send("b")
  assert(ok == false and why == "full", tostring(ok) .. " " .. tostring(why))
  assert(#ch == 1)
  ch:close()
  ok, why = ch:try_send("c")
  assert(ok == false and why == "closed", tostring(ok) .. " " .. tostring(why))
  assert(ch:recv() == "a")
end)

test("try_recv returns a value, or nil with 'empty' or 'closed'", function()
  local ch = channel()
  local v, why = ch:try_recv()
  assert(v == nil and why == "empty", tostring(v) .. " " .. tostring(why))
  ch:send(false) -- false is a value, not "nothing"
  v, why = ch:try_recv()
  assert(v == false and why == nil, "got " .. tostring(v) .. " " .. tostring(why))
  ch:send(1)
  ch:close()
  assert(ch:try_recv() == 1)
  v, why = ch:try_recv()
  assert(v == nil and why == "closed", tostring(v) .. " " .. tostring(why))
end)

test("try_recv takes from a waiting sender and lets it go on", function()
  local ch = channel(0)
  local t = spawn(function() ch:send("x") return "sent" end)
  assert(ch:try_recv() == "x")
  assert(wait(t) == "sent")
end)

test("try_send hands straight to a waiting receiver", function()
  local ch = channel(0)
  local got
  local r = spawn(function() got = ch:recv() end)
  assert(ch:try_send(9) == true)
  wait(r)
  assert(got == 9)
end)

test("#ch counts buffered values", function()
  local ch = channel(3)
  assert(#ch == 0)
  ch:send(1)
  ch:send(2)
  assert(#ch == 2, "#ch " .. #ch)
  ch:recv()
  assert(#ch == 1, "#ch " .. #ch)
  ch:send(3)
  ch:send(4)
  assert(#ch == 3, "#ch " .. #ch)
  local t = spawn(function() ch:send(5) end) -- waits: not buffered
  assert(#ch == 3, "#ch with a waiting sender " .. #ch)
  ch:recv()
  assert(#ch == 3, "the waiting sender's value did not fill the room: #ch " .. #ch)
  wait(t)
end)

-- ---- nil and bad values ----

test("send(nil) is an error", function()
  local ch = channel()
  local ok, err = pcall(ch.send, ch, nil)
  assert(not ok, "send(nil) accepted")
  assert(tostring(err):find("nil"), tostring(err))
  assert(not pcall(ch.send, ch), "send() accepted")
  assert(not pcall(ch.try_send, ch, nil), "try_send(nil) accepted")
  assert(#ch == 0)
end)

-- ---- cancellation ----

test("a cancelled receiver never loses a value: the next receiver gets it", function()
  local ch = channel()
  local got1, got2
  local r1 = spawn(function() got1 = ch:recv() end)
  local r2 = spawn(function() got2 = ch:recv() end)
  r1:cancel()
  ch:send("v")
  wait(r2)
  assert(got1 == nil, "the cancelled receiver got " .. tostring(got1))
  assert(got2 == "v", "the next receiver got " .. tostring(got2))
  assert(#ch == 0)
end)

test("a cancelled receiver with no other receiver leaves the value buffered", function()
  local ch = channel()
  local r = spawn(function() ch:recv() end)
  r:cancel()
  ch:send("kept")
  assert(#ch == 1, "#ch " .. #ch)
  assert(ch:recv() == "kept")
end)

test("a receiver cancelled after a value was handed to it, before it ran, does not lose it", function()
  local ch = channel()
  local got1, got2
  local r1 = spawn(function() got1 = ch:recv() end)
  local r2 = spawn(function() got2 = ch:recv() end)
  ch:send("v")     -- handed to r1, which has not run yet
  r1:cancel()      -- r1 never returns from recv
  ch:send("w")
  wait(r2)
  assert(got1 == nil)
  assert(got2 == "v", "the value handed to the cancelled receiver was lost: r2 got " .. tostring(got2))
  assert(ch:try_recv() == "w")
end)

test("a cancelled sender's value is not delivered", function()
  local ch = channel(0)
  local s = spawn(function() ch:send("ghost") end)
  s:cancel()
  local v, why = ch:try_recv()
  assert(v == nil and why == "empty", "got " .. tostring(v))
end)

-- ---- waiting on a channel as a value ----

test("a channel in a wait list receives one value", function()
  local ch = channel()
  spawn(function() wait(0.1) ch:send("x") end)
  local v, e = wait{ch, 0.05}
  assert(v == "x" and type(e) == "number", "got " .. tostring(v))
end)

test("weft.tasks() shows channel waits", function()
  local ch = channel(0)
  local r = spawn(function() ch:recv() end)
  local i = info_of(r)
  assert(i.waiting == "channel recv", "receiver waiting " .. tostring(i.waiting))
  ch:close()
  local ch2 = channel(0)
  local s = spawn(function() ch2:send(1) end)
  i = info_of(s)
  assert(i.waiting == "channel send", "sender waiting " .. tostring(i.waiting))
  s:cancel()
end)

test("wait(ch) receives a value, then nil, 'closed'; channel(nil) is unbounded", function()
  local ch = channel(nil)
  for i = 1, 100 do assert(ch:try_send(i), "channel(nil) was full at " .. i) end
  assert(#ch == 100, "#ch " .. #ch)
  local c2 = channel()
  spawn(function() wait() c2:send("v") c2:close() end)
  local v = wait(c2)
  assert(v == "v" and frame() == 1, "wait(ch) gave " .. tostring(v) .. " in frame " .. frame())
  local n, why = wait(c2)
  assert(n == nil and why == "closed", "wait on a closed channel gave " .. tostring(n) .. ", " .. tostring(why))
end)

test("a channel handle is the same value everywhere: through a channel, a future and a signal", function()
  local ch, carrier, f, s = channel(), channel(), future(), signal()
  carrier:send(ch)
  assert(rawequal(carrier:recv(), ch), "through a channel it came back as another value")
  local got
  spawn(function() got = wait(s) end)
  s:fire(ch)
  wait() -- the woken waiter runs once this task waits
  f:resolve(ch)
  assert(rawequal(wait(f), ch), "through a future it came back as another value")
  assert(rawequal(got, ch), "through a signal it came back as another value")
end)
