#!/bin/sh
# The weft program as a user runs it: exit codes, where output goes, the
# test runner's report. Usage: run.sh path/to/weft
weft=${1:-build/weft}
# The default runaway limit (1 s of script time) holds a correct script's
# biggest one-off work (a 100,000-spawn setup loop: 0.35 s here; an 18 MB
# load: 0.42 s; spawners filling 64 MB) on a real machine. A sanitizer
# build (SAN set by make asan) runs them 4-18x slower: there the tests of
# that work give the limit the same slowdown, and what they show, that
# the work is whole, is still checked.
slow=${SAN:+--runaway 20s}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
pass=0
fail=0
check() { # name, condition (shell expression)
  if eval "$2"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL $1"; fi
}

printf 'print("hello", now(), frame())\nwait(0.5)\nprint("woke", frame())\n' > "$dir/ok.lua"
"$weft" run "$dir/ok.lua" > "$dir/out" 2> "$dir/err"
check "a finished script exits 0" "[ $? -eq 0 ]"
check "print goes to stdout" "grep -q '^hello	0.0	0$' '$dir/out'"
check "wait(0.5) at the default dt resumes on frame 30" "grep -q '^woke	30$' '$dir/out'"
check "nothing on stderr" "[ ! -s '$dir/err' ]"

printf 'print("a\\0b")\n' > "$dir/nul.lua"
"$weft" run "$dir/nul.lua" > "$dir/out" 2> "$dir/err"
printf 'a\000b\n' > "$dir/want"
check "print writes zero bytes through, as lua5.4 does" "cmp -s '$dir/out' '$dir/want'"

printf 'print(string.rep("a", 4000), "x")\nspawn(function() print(string.rep("b", 9000), 1, true) end)\n' > "$dir/longprint.lua"
"$weft" run "$dir/longprint.lua" > "$dir/out" 2> "$dir/err"
check "print of a long string and another value writes both, tab-separated (main and child task)" \
  "[ $? -eq 0 ] && [ \"\$(cut -c3998-4003 '$dir/out' | head -1)\" = \"\$(printf 'aaa\tx')\" ] && [ \"\$(awk 'NR==2' '$dir/out' | wc -c)\" = 9008 ]"

printf 'wait(1)\nerror("boom")\n' > "$dir/fail.lua"
"$weft" run "$dir/fail.lua" > "$dir/out" 2> "$dir/err"
check "a failing script exits 1" "[ $? -eq 1 ]"
check "its error names file:line on stderr" "grep -q 'fail.lua:2: boom' '$dir/err'"
check "with a traceback" "grep -q 'stack traceback' '$dir/err'"

printf 'spawn(function() error("child broke") end)\nwait()\nprint("main done")\n' > "$dir/child.lua"
"$weft" run "$dir/child.lua" > "$dir/out" 2> "$dir/err"
check "a child task's error fails that task only: the file's task finishes, exit 0" "[ $? -eq 0 ] && grep -q '^main done$' '$dir/out'"
check "and its report (error, traceback, spawned at) goes to stderr, not stdout" "grep -q 'child.lua:1: child broke' '$dir/err' && grep -q '^spawned at .*child.lua:1$' '$dir/err' && ! grep -q broke '$dir/out'"

printf 'x = = 1\n' > "$dir/syntax.lua"
"$weft" run "$dir/syntax.lua" > "$dir/out" 2> "$dir/err"
check "a syntax error exits 1" "[ $? -eq 1 ]"
check "and names file:line" "grep -q 'syntax.lua:1:' '$dir/err'"

printf 'while true do wait() end\n' > "$dir/forever.lua"
"$weft" run "$dir/forever.lua" --frames 10 > "$dir/out" 2> "$dir/err"
check "--frames N stops a script that goes on: exit 2" "[ $? -eq 2 ]"

printf 'spawn(function() local _ <close> = finally(function() print("cleanup") end) wait(100) end)\nwait(0.1)\n' > "$dir/left.lua"
"$weft" run "$dir/left.lua" > "$dir/out" 2> "$dir/err"
check "tasks left when the file's task ends are cancelled, cleanups run" "grep -q '^cleanup$' '$dir/out'"

printf 'spawn(function() local _ <close> = finally(function() print("child cleanup") end) wait(100) end)\nlocal _ <close> = finally(function() print("main cleanup") end)\nwhile true do wait() end\n' > "$dir/stopped.lua"
"$weft" run "$dir/stopped.lua" --frames 5 > "$dir/out" 2> "$dir/err"
check "--frames N: exit 2, then every task left is cancelled, its cleanups run, children first" "[ $? -eq 2 ] && [ \"\$(cat '$dir/out')\" = \"\$(printf 'child cleanup\nmain cleanup')\" ]"

printf 'wait(0.3)\nprint(frame(), realtime())\n' > "$dir/paced.lua"
start=$(date +%s%N)
"$weft" run "$dir/paced.lua" --realtime > "$dir/out" 2> "$dir/err"
ms=$((($(date +%s%N) - start) / 1000000))
check "--realtime paces frames to the wall clock: wait(0.3) takes 0.3 s ($ms ms)" "[ $ms -ge 290 ] && grep -q '^[0-9]*	0.3' '$dir/out'"

printf 'local s = 0\nfor i = 1, 1e6 do s = s + i end\nprint(s, frame())\n' > "$dir/long.lua"
"$weft" run "$dir/long.lua" --budget 10000 > "$dir/out" 2> "$dir/err"
check "--budget N: a stretch far over N instructions is preempted every N and goes on to its end frames later" \
  "[ $? -eq 0 ] && awk '\$1 == 500000500000 && \$2 > 100 { ok = 1 } END { exit !ok }' '$dir/out'"
"$weft" run "$dir/long.lua" --budget 10000000 > "$dir/out" 2> "$dir/err"
check "--budget N: the same stretch within N runs to the end in its first frame" "[ $? -eq 0 ] && grep -q '^500000500000	0$' '$dir/out'"
"$weft" run "$dir/long.lua" --budget 10000 --runaway 5ms > "$dir/out" 2> "$dir/err"
check "--runaway T: counted, a stretch past T x 200 instructions without a wait is killed at its line" \
  "[ $? -eq 1 ] && grep -q 'long.lua:2: script ran too long without waiting' '$dir/err'"

mkdir -p "$dir/root/lib"
printf 'return {answer = 42}\n' > "$dir/root/lib/m.lua"
printf 'print(require("lib.m").answer)\n' > "$dir/req.lua"
"$weft" run "$dir/req.lua" --scripts "$dir/root" > "$dir/out" 2> "$dir/err"
check "--scripts DIR: require finds modules under DIR" "[ $? -eq 0 ] && grep -q '^42$' '$dir/out'"

printf '%s\n' 'collectgarbage("stop")' 'local keep = {}' 'wait()' 'print(collectgarbage("isrunning"))' \
  'repeat keep[#keep + 1] = ("x"):rep(1 << 16) .. #keep until collectgarbage("count") > 5 * 1024' \
  'keep = nil' 'wait()' 'print(collectgarbage("isrunning"))' > "$dir/gcstop.lua"
"$weft" run "$dir/gcstop.lua" --memory 8 --budget 1000ms > "$dir/out" 2> "$dir/err" # no stop: slow under ASan
check "collectgarbage('stop') holds until the heap passes half of --memory" "[ $? -eq 0 ] && [ \"\$(tr '\\n' ' ' < '$dir/out')\" = 'false true ' ]"
printf 'print(#arg, arg[0] == arg[0], arg[1], arg[2], arg[-1])\n' > "$dir/args.lua"
"$weft" run "$dir/args.lua" x y --frames 5 > "$dir/out" 2> "$dir/err"
check "weft run FILE a b: arg as lua.c sets it" "[ $? -eq 0 ] && grep -q '^2	true	x	y	run$' '$dir/out'"

printf 'print(frame(), now())\n' > "$dir/dt.lua"
printf 'wait(1)\nprint(frame())\n' > "$dir/dt.lua"
"$weft" run "$dir/dt.lua" --dt 0.25 > "$dir/out" 2> "$dir/err"
check "--dt sets the virtual frame time" "grep -q '^4$' '$dir/out'"
"$weft" run "$dir/dt.lua" --dt 1e10 > "$dir/out" 2> "$dir/err"
check "a --dt beyond 1e6 s is refused" "[ $? -ne 0 ] && grep -q 'bad --dt' '$dir/err'"

printf 'local t = {} for i = 1, 1e8 do t[i] = i end\n' > "$dir/hog.lua"
"$weft" run "$dir/hog.lua" --memory 8 > "$dir/out" 2> "$dir/err"
check "--memory limits Lua memory: the hog fails with not enough memory at its file:line" "grep -q 'hog.lua:1: not enough memory' '$dir/err'"

printf 'spawn(function() wait(math.huge) end)\nwait()\n' > "$dir/dump.lua"
"$weft" run "$dir/dump.lua" --dump-tasks > "$dir/out" 2> "$dir/err"
check "--dump-tasks lists the live tasks" "grep -q 'sleep forever' '$dir/out'"
printf 'local guard = group{name = "gate_guard"}\nguard:spawn(function() wait(math.huge) end)\nwait()\n' > "$dir/who.lua"
"$weft" run "$dir/who.lua" --dump-tasks > "$dir/out" 2> "$dir/err"
check "--dump-tasks names each task's entity first" "grep -q '^who=gate_guard  id=' '$dir/out'"
printf 'local guard = group{name = "gate_guard"}\nlocal t = guard:spawn(function() wait() error("lost the key") end)\npcall(wait, t)\n' > "$dir/whofail.lua"
"$weft" run "$dir/whofail.lua" > "$dir/out" 2> "$dir/err"
check "an error report names the entity first" "grep -q '^error: gate_guard: .*whofail.lua:2: lost the key' '$dir/err'"

mkdir -p "$dir/t"
cat > "$dir/t/a_test.lua" <<'LUA'
test("passes", function() wait(0.1) end)
test("fails", function() error("nope") end)
test("never ends", function() wait(math.huge) end, {frames = 5})
test("child fails", function() spawn(function() error("child boom") end) wait(0.1) end)
test("child fails, expected", function() spawn(function() error("meant") end) end, {reports = true})
LUA
"$weft" test "$dir/t" > "$dir/out" 2> "$dir/err"
check "weft test exits 1 when a case failed" "[ $? -eq 1 ]"
check "it ends with N passed, N failed" "tail -1 '$dir/out' | grep -q '^2 passed, 3 failed$'"
check "a case whose child task failed unhandled fails" "grep -q 'child fails: a task failed and no weft.on_error handled it: .*child boom' '$dir/out'"
check "a failure names file:line" "grep -q 'FAIL .*a_test.lua:2: fails: .*a_test.lua:2: nope' '$dir/out'"
check "a case over its frame limit fails" "grep -q 'never ends: not finished after 5 frames' '$dir/out'"

mkdir -p "$dir/lim"
cat > "$dir/lim/a_test.lua" <<'LUA'
test("a stretch of 1e6 steps without a wait", function()
  local t = spawn(function() local s = 0 for i = 1, 1e6 do s = s + i end return s end)
  while t.status == "waiting" do wait() end
  assert(t.status == "done", "the stretch " .. t.status .. ": " .. tostring(t.error))
end)
test("a table of 1e6 numbers", function() local t = {} for i = 1, 1e6 do t[i] = i if i % 1000 == 0 then wait() end end end)
LUA
"$weft" test "$dir/lim" > "$dir/out" 2> "$dir/err"
check "weft test: the default limits hold a stretch of 1e6 steps and a table of 1e6 numbers" "[ $? -eq 0 ] && tail -1 '$dir/out' | grep -q '^2 passed, 0 failed$'"
"$weft" test "$dir/lim" --budget 10000 > "$dir/out" 2> "$dir/err"
check "weft test --budget N: each case's resumes are preempted at N instructions and still pass" "[ $? -eq 0 ] && tail -1 '$dir/out' | grep -q '^2 passed, 0 failed$'"
"$weft" test "$dir/lim" --runaway 1ms > "$dir/out" 2> "$dir/err"
check "weft test --runaway T: a stretch past T (x 200 instructions) is killed" "[ $? -eq 1 ] && grep -q 'FAIL .*a_test.lua:1: .*ran too long without waiting' '$dir/out' && tail -1 '$dir/out' | grep -q '^1 passed, 1 failed$'"
"$weft" test "$dir/lim" --memory 4 > "$dir/out" 2> "$dir/err"
check "weft test --memory MB: each case's state is held to MB" "[ $? -eq 1 ] && grep -q 'FAIL .*a_test.lua:6: .*a_test.lua:6: not enough memory' '$dir/out' && tail -1 '$dir/out' | grep -q '^1 passed, 1 failed$'"
"$weft" test "$dir/lim" --budget 2e10 > /dev/null 2> "$dir/err"
check "weft test: a bad --budget is refused" "[ $? -eq 1 ] && grep -q 'bad --budget' '$dir/err'"

mkdir -p "$dir/fresh/sub"
cat > "$dir/fresh/a_test.lua" <<'LUA'
test("sets a global", function() leaked = 1; wait(1) end)
test("a second case starts fresh: frame 0, time 0, no global", function()
  assert(leaked == nil, "a global leaked between cases")
  assert(frame() == 0 and now() == 0, "the clock went on: frame " .. frame())
end)
LUA
printf 'test("another file starts fresh", function() assert(leaked == nil, "leaked between files") end)\n' > "$dir/fresh/sub/b_test.lua"
printf 'error("not a test file: never run")\n' > "$dir/fresh/helper.lua"
"$weft" test "$dir/fresh" > "$dir/out" 2> "$dir/err"
check "weft test: every *_test.lua under DIR, each case in a fresh state; exit 0 when all pass" "[ $? -eq 0 ] && tail -1 '$dir/out' | grep -q '^3 passed, 0 failed$'"
"$weft" test "$dir/fresh/sub/b_test.lua" > "$dir/out" 2> "$dir/err"
check "weft test FILE runs just that file" "[ $? -eq 0 ] && tail -1 '$dir/out' | grep -q '^1 passed, 0 failed$'"
"$weft" test "$dir/t" "$dir/fresh" --list > "$dir/out" 2> "$dir/err"
check "weft test --list names each case as file:line: name and runs none" "[ $? -eq 0 ] && grep -q '^.*t/a_test.lua:3: never ends$' '$dir/out' && grep -q '^.*fresh/sub/b_test.lua:1: another file starts fresh$' '$dir/out' && tail -1 '$dir/out' | grep -q '^8 cases, 0 files failed to load$' && ! grep -q FAIL '$dir/out' && [ ! -s '$dir/err' ]"
"$weft" test "$dir/syntax.lua" --list > "$dir/out" 2> "$dir/err"
check "weft test --list exits 1 when a file does not load" "[ $? -eq 1 ] && grep -q 'FAIL .*syntax.lua' '$dir/out'"
weft_abs=$(cd "$(dirname "$weft")" && pwd)/$(basename "$weft")
(cd "$dir/fresh" && mkdir -p scripts && cp sub/b_test.lua scripts/ && "$weft_abs" test) > "$dir/out" 2> "$dir/err"
check "weft test with no argument runs the scripts root's tests" "[ $? -eq 0 ] && tail -1 '$dir/out' | grep -q '^1 passed, 0 failed$'"

# Record and replay: the recording holds the script, the clocks and the
# random state; a replay prints what the run printed, whatever changed.
mkdir -p "$dir/rr"
printf 'print(math.random(1 << 40), os.time(), os.clock())\nfor i = 1, 3 do wait(0.25) print(frame(), math.random(9)) end\n' > "$dir/rr/main.lua"
"$weft" run "$dir/rr/main.lua" --record "$dir/rr/run.tape" > "$dir/rr/recorded" 2> "$dir/err"
check "--record runs the script as ever: exit 0" "[ $? -eq 0 ] && [ -s '$dir/rr/run.tape' ]"
printf 'print("edited")\n' > "$dir/rr/main.lua"
"$weft" run --replay "$dir/rr/run.tape" --verify > "$dir/out" 2> "$dir/err"
check "--replay --verify exits 0 when every frame matches" "[ $? -eq 0 ]"
check "and prints what the recorded run printed (not the edited file)" "cmp -s '$dir/out' '$dir/rr/recorded'"
check "and says how many frames matched" "grep -q '^weft: replayed [0-9]* frames, each as recorded$' '$dir/err'"
printf 'print(#arg, arg[1], arg[2])\nprint(select("#", ...), ...)\n' > "$dir/rr/args.lua"
"$weft" run "$dir/rr/args.lua" first "two words" --record "$dir/rr/args.tape" > "$dir/rr/args.out" 2> "$dir/err"
check "a script's arguments are arg[1..] and its chunk's ..., as lua.c gives them" \
  "[ \$? -eq 0 ] && [ \$(grep -c '^2	first	two words$' '$dir/rr/args.out') -eq 2 ]"
"$weft" run --replay "$dir/rr/args.tape" --verify > "$dir/out" 2> "$dir/err"
check "a replay gives the script the recorded arguments (arg and ...)" \
  "[ \$? -eq 0 ] && cmp -s '$dir/out' '$dir/rr/args.out'"
head -c 100 "$dir/rr/run.tape" > "$dir/rr/cut.tape"
"$weft" run --replay "$dir/rr/cut.tape" > "$dir/out" 2> "$dir/err"
check "a truncated recording exits 1" "[ $? -eq 1 ]"
check "saying it is truncated" "grep -q 'cut.tape: truncated' '$dir/err'"
cp "$dir/rr/run.tape" "$dir/rr/bad.tape"
printf 'Z' | dd of="$dir/rr/bad.tape" bs=1 seek=200 conv=notrunc 2>/dev/null
"$weft" run --replay "$dir/rr/bad.tape" > "$dir/out" 2> "$dir/err"
check "a corrupted recording exits 1, saying so" "[ $? -eq 1 ] && grep -q 'bad.tape: corrupted' '$dir/err'"
"$weft" run --replay "$dir/rr/main.lua" > "$dir/out" 2> "$dir/err"
check "a file that is no recording exits 1, saying so" "[ $? -eq 1 ] && grep -q 'main.lua: not a weft recording' '$dir/err'"
"$weft" run "$dir/ok.lua" --verify > "$dir/out" 2> "$dir/err"
check "--verify without --replay is a usage error" "[ $? -eq 1 ] && grep -q 'usage' '$dir/err'"

printf 'local n = 0\nwhile true do n = n + 1 if n %% 30 == 0 then print(frame(), math.random(100)) end wait() end\n' > "$dir/rr/long.lua"
"$weft" run "$dir/rr/long.lua" --realtime --record "$dir/rr/killed.tape" > /dev/null 2> "$dir/err" &
pid=$!
sleep 3
kill -9 $pid
wait $pid 2>/dev/null
"$weft" run --replay "$dir/rr/killed.tape" --verify > "$dir/out" 2> "$dir/err"
rc=$?
n=$(sed -n 's/^weft: replaying \([0-9]*\) of ? frames: the recording was cut short$/\1/p' "$dir/err")
check "a recording killed with kill -9 after 3 s replays and verifies its prefix: exit 0 ($n frames)" "[ $rc -eq 0 ] && [ -n '$n' ] && [ '$n' -ge 120 ]"
check "saying it was cut short, then how many frames matched" "grep -q '^weft: replayed $n frames, each as recorded$' '$dir/err'"

mkdir -p "$dir/ff/scripts"
mkfifo "$dir/ff/scripts/x.lua"
printf 'print(pcall(require, "x"))\nfor i = 1, 40 do wait() end\nprint("done")\n' > "$dir/ff/main.lua"
( sleep 0.2; mkfifo "$dir/ff/scripts/y.lua" ) &
timeout 20 "$weft" run "$dir/ff/main.lua" --scripts "$dir/ff/scripts" --watch --realtime > "$dir/out" 2> "$dir/err"
rc=$?
wait
check "FIFOs named like scripts under --watch cost no hang: the run ends (exit $rc)" "[ $rc -eq 0 ] && grep -q '^done$' '$dir/out' && grep -q '^false' '$dir/out'"
check "and one warning for the one that was read" "[ \$(grep -c 'x.lua is not a regular file' '$dir/err') -eq 1 ] && ! grep -q 'y.lua' '$dir/err'"

printf 'for i = 1, 2 do spawn(function() for j = 1, 1e6 do spawn(function() wait(1e9) end) end end) end\nwhile true do wait() end\n' > "$dir/bomb.lua"
start=$(date +%s%N)
timeout 60 "$weft" run "$dir/bomb.lua" --frames 10 --memory 64 --budget off > "$dir/out" 2> "$dir/err"
rc=$?
ms=$((($(date +%s%N) - start) / 1000000))
check "a spawn bomb that fills the memory ends the run (--frames 10: exit 2; $ms ms)" "[ $rc -eq 2 ]"
check "with one report per spawner, raised at its spawn" "[ \$(grep -c 'not enough memory' '$dir/err') -eq 2 ] && grep -q \"in function 'spawn'\" '$dir/err'"
start=$(date +%s%N)
timeout 60 "$weft" run "$dir/bomb.lua" --frames 2000 --memory 64 $slow > "$dir/out" 2> "$dir/err"
rc=$?
ms=$((($(date +%s%N) - start) / 1000000))
check "under the time budget the spawners are preempted, go on, and fail when the memory is full (exit 2; $ms ms), one report each" \
  "[ $rc -eq 2 ] && [ \$(grep -c '^error: .*not enough memory' '$dir/err') -eq 2 ]"

# Compiling counts toward a stretch's runaway limit and nothing else: a
# load of an 18 MB chunk compiles whole and runs.
printf 'local f, err = load(string.rep("x = 1\\n", 3000000) .. "return x")\nprint(f ~= nil, err, f and f())\nprint(type(load(string.rep("x = 1\\n", 1000))))\n' > "$dir/bigload.lua"
"$weft" run "$dir/bigload.lua" $slow > "$dir/out" 2> "$dir/err"
check "load of an 18 MB chunk compiles whole, runs, and the script goes on${slow:+ ($slow)}" \
  "[ \$? -eq 0 ] && grep -q '^true	nil	1$' '$dir/out' && grep -q '^function$' '$dir/out'"

# Lua's parser runs no instruction, so a load is read in pieces; a reader
# function that never ends runs a few instructions a piece while the
# parser works: the load stops between two pieces once the stretch is a
# runaway.
printf 'local piece = ("x = 1\\n"):rep(1000)\nprint(load(function() return piece end))\nprint("after")\n' > "$dir/reader.lua"
timeout 20 "$weft" run "$dir/reader.lua" > "$dir/out" 2> "$dir/err"
check "load from a reader that never ends stops at the runaway limit, naming the line, and the script goes on" \
  "[ \$? -eq 0 ] && grep -q '^nil	.*reader.lua:2: script ran too long (load was still compiling its chunk)$' '$dir/out' && grep -q '^after$' '$dir/out'"
# Counted budgets (tests, recordings) see no parser time: a piece read
# is charged a byte an instruction and 64 a piece, so the same reader,
# a few bytes a call, ends the same way there.
printf 'print(load(function() return "x = 1 " end))\nprint("after")\n' > "$dir/reader2.lua"
timeout 60 "$weft" run "$dir/reader2.lua" --budget 1e6 --runaway 100ms > "$dir/out" 2> "$dir/err"
check "under a counted budget too (--budget 1e6)" \
  "[ \$? -eq 0 ] && grep -q '^nil	.*reader2.lua:1: script ran too long (load was still compiling its chunk)$' '$dir/out' && grep -q '^after$' '$dir/out'"

# Every task's script time: a heavy listener is named once, at the top by cost.
cat > "$dir/slow.lua" <<'LUA'
local function burn(ms) local t = os.clock() + ms / 1000 while os.clock() < t do end end
-- each waits a frame first, so its name is set before it first runs long
-- (a resume past its time is stopped, and its spawner with it)
local ears = spawn(function() wait() while true do burn(12) wait() end end)
ears.name = "ears"
local feet = spawn(function() wait() while true do burn(0.5) wait() end end)
feet.name = "feet"
wait(40 / 60)
local list = weft.tasks()
table.sort(list, function(a, b) return a.avg_ms > b.avg_ms end)
for _, t in ipairs(list) do print(t.name, string.format("%.1f %.1f %.1f", t.ms, t.avg_ms, t.worst_ms)) end
LUA
"$weft" run "$dir/slow.lua" > "$dir/out" 2> "$dir/err"
check "a task over 4 ms between two waits, again, gets one warning naming it, its spawn site, its line and its time" \
  "[ \$(grep -c 'ms of script time' '$dir/err') -eq 1 ] && grep -q '^weft: .*slow.lua:4: ears .*slow.lua:4: [0-9.]* ms of script time between two waits, again$' '$dir/err'"
check "weft.tasks() gives each task's time (this frame, average, worst): the heavy one first" \
  "head -1 '$dir/out' | grep -q '^ears	' && awk '\$1 == \"ears\" && \$4 > 1 { ok = 1 } END { exit !ok }' '$dir/out'"

# A group's time: its tasks' and its inner groups', those that ended too
# (a listener doing its work in a task each fire shows in no list of live
# tasks, and adds up in its group). The cost clock is the watchdog's
# reading of the scripts thread's processor time, right on average; on a
# busy machine its ticks come late and a share is lost, so 3 ms a frame
# is asked to read over 1.
cat > "$dir/groups.lua" <<'LUA'
local function burn(ms) local t = os.clock() + ms / 1000 while os.clock() < t do end end
local listeners = group{name = "listeners"}
local inner = group{name = "inner", parent = listeners}
local quiet = group{name = "quiet"}
local ping = signal()
inner:spawn(function() ping:connect(function() burn(3) end) end)
quiet:spawn(function() while true do wait() end end)
spawn(function() while true do ping:fire() wait() end end)
wait(20 / 60)
local live = 0
for _, t in ipairs(weft.tasks()) do if t.group == inner then live = live + t.avg_ms end end
print(string.format("listeners %.1f %.1f %.1f", listeners.ms, listeners.avg_ms, listeners.worst_ms))
print(string.format("inner %.1f %.1f", inner.ms, inner.avg_ms))
print(string.format("quiet %.1f %.1f", quiet.ms, quiet.avg_ms))
print(string.format("live %.1f", live))
LUA
"$weft" run "$dir/groups.lua" > "$dir/out" 2> "$dir/err"
check "a group's time adds up its tasks', ended ones too, and its inner groups' (g.ms, g.avg_ms, g.worst_ms)" \
  "[ \$? -eq 0 ] && awk '\$1 == \"listeners\" && \$3 > 1 && \$4 >= \$3 { a = 1 } \$1 == \"inner\" && \$3 > 1 { b = 1 } \$1 == \"quiet\" && \$3 < 0.5 { c = 1 } \$1 == \"live\" && \$2 < 0.5 { d = 1 } END { exit !(a && b && c && d) }' '$dir/out'"

"$weft" run tests/profile/heavy.lua --profile "$dir/prof.json" > "$dir/out" 2> "$dir/err"
check "--profile writes a Chrome trace and a speedscope file" \
  "[ $? -eq 0 ] && grep -q '\"traceEvents\"' '$dir/prof.json' && grep -q 'speedscope' '$dir/prof.speedscope.json'"

# ---- a script does the same thing on every machine: preemption changes
# when work lands, never what it computes; only a runaway dies ----

awk 'BEGIN { print "local rows = {"; for (i = 0; i < 50000; i++)
  printf "  {id = %d, name = \"row%d\", x = %d.5, tags = {\"a\", \"b\"}, note = \"some text for row %d\"},\n", i, i, i, i
  print "}"; print "print(#rows, rows[50000].name)" }' > "$dir/data.lua"
"$weft" run "$dir/data.lua" > "$dir/out" 2> "$dir/err"
check "a main script of $(($(wc -c < "$dir/data.lua") / 1048576)) MB of data compiles whole and runs, with default flags" \
  "[ \$? -eq 0 ] && grep -q '^50000	row49999$' '$dir/out'"

printf 'local g = group{}\nfor i = 1, 100000 do g:spawn(function() while true do wait(0.25) end end) end\nprint("spawned", #g:tasks(), frame())\nwait(1)\nprint("done")\n' > "$dir/setup.lua"
"$weft" run "$dir/setup.lua" $slow > "$dir/out" 2> "$dir/err"
check "a setup loop of 100,000 spawns runs to its end, with default flags${slow:+ (but $slow)}" \
  "[ \$? -eq 0 ] && grep -q '^spawned	100000	' '$dir/out' && grep -q '^done$' '$dir/out'"

printf 'local t = {}\nfor k = 1, 1e9 do\n  for j = 1, 2000 do t[#t + 1] = string.rep("x", 4096) .. j .. k end\n  wait()\nend\n' > "$dir/hog.lua"
"$weft" run "$dir/hog.lua" --memory 64 > "$dir/out" 2> "$dir/err"
check "an allocation loop ends at its memory limit, not its time: 'not enough memory' at its line" \
  "[ \$? -eq 1 ] && grep -q 'hog.lua:3: not enough memory' '$dir/err' && ! grep -q 'too long' '$dir/err'"

printf 'weft.on_error(function(e) end)\nwait()\nerror("main broke")\n' > "$dir/handled.lua"
"$weft" run "$dir/handled.lua" > "$dir/out" 2> "$dir/err"
check "a main script's failure is printed even when a weft.on_error handler took its report" \
  "[ \$? -eq 1 ] && grep -q 'handled.lua:3: main broke' '$dir/err'"

# The kill comes after desc.runaway_us of the stretch's own script time
# (processor time): the time at the kill, as os.clock reads it in the
# handler, grows with the limit. Ratios only: no wall-clock threshold.
printf 'weft.on_error(function() print(os.clock()) end)\nprint(os.clock())\npcall(wait, spawn(function() while true do end end))\n' > "$dir/runaway.lua"
"$weft" run "$dir/runaway.lua" --runaway 100ms > "$dir/out100" 2> "$dir/err"
rc100=$?
"$weft" run "$dir/runaway.lua" > "$dir/out1000" 2> "$dir/err"
rc1000=$?
r=$(awk 'FNR == 1 { t0 = $1 } FNR == 2 { t[++n] = $1 - t0 } END { if (n == 2 && t[1] > 0) printf "%.1f", t[2] / t[1]; else print 0 }' \
  "$dir/out100" "$dir/out1000")
check "a runaway is killed after its limit of script time: the default (1 s) takes $r times --runaway 100ms" \
  "[ $rc100 -eq 0 ] && [ $rc1000 -eq 0 ] && awk 'BEGIN { exit !($r >= 6 && $r <= 14) }'"

# warn as lua.c shows it: off until "@on", "@..." controls, the pieces
# one message, on stderr (weft's own warnings' place without a logger).
printf '%s\n' 'warn("hidden")' 'warn("@on")' 'warn("low ", "fuel: ", 3)' 'warn("@other")' \
  'warn("@on", "x")' 'warn("@off")' 'warn("gone")' 'print("done")' > "$dir/warn.lua"
lua5.4 "$dir/warn.lua" > "$dir/want" 2> "$dir/want_err"
"$weft" run "$dir/warn.lua" > "$dir/out" 2> "$dir/err"
check "warn writes what lua5.4 writes, on stderr: off by default, @on/@off, pieces joined" \
  "[ \$? -eq 0 ] && cmp -s '$dir/want' '$dir/out' && cmp -s '$dir/want_err' '$dir/err' && grep -q '^Lua warning: low fuel: 3$' '$dir/err'"

# Roots are roots: every file a script names lies inside the scripts or
# assets root with its symbolic links followed, or opens nothing and says
# why; a link that stays inside is followed.
mkdir -p "$dir/rt/scripts/sub" "$dir/rt/assets"
printf 'return 7\n' > "$dir/rt/scripts/sub/m.lua"
ln -s /etc "$dir/rt/scripts/etcdir"
ln -s /proc/self "$dir/rt/scripts/proc"
ln -s /etc/passwd "$dir/rt/scripts/pw.lua"
ln -s sub "$dir/rt/scripts/inner"
ln -s /etc "$dir/rt/assets/etc"
cat > "$dir/rt/main.lua" <<'LUA'
print("io.open", io.open("scripts/etcdir/passwd"))
print("proc", io.open("scripts/proc/status"))
print("loadfile", loadfile("scripts/pw.lua"))
print("dofile", pcall(dofile, "scripts/etcdir/passwd"))
print("require", pcall(require, "etcdir.passwd"))
print("searchpath", package.searchpath("pw", "scripts/?.lua"))
print("assets", io.open("assets/etc/passwd"))
print("job", pcall(wait, job("read_file", "etc/passwd")))
print("inside", io.open("scripts/inner/m.lua"):read("l"), require("inner.m"))
LUA
(cd "$dir/rt" && "$weft_abs" run main.lua) > "$dir/out" 2> "$dir/err"
out=$dir/out
check "io.open through a symbolic link to /etc under the scripts root: nil, why, EACCES" \
  "grep -q '^io.open	nil	scripts/etcdir/passwd: a symbolic link leads outside the root	13$' '$out'"
check "io.open through a link to /proc/self: nil, why" "grep -q '^proc	nil	scripts/proc/status: a symbolic link leads outside the root	13$' '$out'"
check "loadfile, dofile, require and package.searchpath through a link out of the root find nothing" \
  "grep -q '^loadfile	nil	cannot open scripts/pw.lua: a symbolic link leads outside the root$' '$out' && grep -q '^dofile	false	cannot open scripts/etcdir/passwd: a symbolic link leads outside the root$' '$out' && grep -q '^require	false	' '$out' && grep -q '^searchpath	nil	no file .scripts/pw.lua.$' '$out'"
check "io.open and job('read_file') through a link out of the assets root: nil, why / a failed future" \
  "grep -q '^assets	nil	assets/etc/passwd: a symbolic link leads outside the root	13$' '$out' && grep -q '^job	false	cannot read assets/etc/passwd: a symbolic link leads outside the root$' '$out'"
check "a symbolic link that stays inside the root is followed" "grep -q '^inside	return 7	7	scripts/inner/m.lua$' '$out'"

# A recording is a file from someone else: one made with looser limits
# (here 1,000 MB) replays under the replaying program's own, and says so.
printf 'local s = string.rep("x", 300 << 20)\nwait()\nprint(#s)\n' > "$dir/hog300.lua"
"$weft" run "$dir/hog300.lua" --memory 1000 --record "$dir/hog300.tape" > "$dir/out" 2> "$dir/err"
rec=$?
"$weft" run --replay "$dir/hog300.tape" > "$dir/out" 2> "$dir/err"
rc=$?
check "a recording made with --memory 1000 replays under this program's 256 MB, saying so, and fails there" \
  "[ $rec -eq 0 ] && [ $rc -eq 1 ] && grep -q 'looser limits than this program allows (memory)' '$dir/err' && grep -q 'not enough memory' '$dir/err'"

# Finalizers are a budgeted share of each frame: a chain that makes more
# than it finishes is cut, said once; weft_close gives the rest 200 ms.
printf 'local function mk() setmetatable({}, {__gc = function() mk() mk() end}) end\nmk()\nfor f = 1, 300 do local junk = {} for i = 1, 1000 do junk[i] = {} end wait() end\nprint("done")\n' > "$dir/chain.lua"
printf 'for i = 1, 1000 do setmetatable({}, {__gc = function() while true do end end}) end\nprint("done")\n' > "$dir/loopers.lua"
timeout 60 "$weft" run "$dir/chain.lua" > "$dir/out" 2> "$dir/err"
check "a chain of finalizers making two more each: the run ends, the cut said once" \
  "[ \$? -eq 0 ] && grep -q '^done$' '$dir/out' && [ \$(grep -c 'finalizers are made faster than they run' '$dir/err') -eq 1 ]"
start=$(date +%s%N)
timeout 60 "$weft" run "$dir/loopers.lua" > "$dir/out" 2> "$dir/err"
rc=$?
ms=$((($(date +%s%N) - start) / 1000000))
check "1,000 looping finalizers at close: those out of time are said and not run ($ms ms)" \
  "[ $rc -eq 0 ] && grep -q 'finalizers not run (their time at close, 200 ms, was spent)' '$dir/err'"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
