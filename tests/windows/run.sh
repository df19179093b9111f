#!/bin/sh
# The Windows build under wine64, headless: the C tests, the script tests
# through weft.exe, examples/embed, and recordings made by the Linux weft
# replayed with --verify by weft.exe (and one made by weft.exe replayed on
# Linux). Counts cases, not programs. Run from the top of the tree.
# Usage: run.sh WIN-DIR LINUX-WEFT WINE TEST.exe...
win=$1
linux_weft=$2
wine=$3
shift 3
top=$(pwd)
pass=0
fail=0
ok() { pass=$((pass + ${2:-1})); echo "ok    $1"; }
bad() { # name [log] [count]
  fail=$((fail + ${3:-1})); echo "FAIL  $1"
  [ -n "$2" ] && [ -f "$2" ] && sed 's/^/      /' "$2" | tail -30
}

# A prefix of our own, made anew each run; no display.
export WINEPREFIX="$top/$win/wine" WINEDEBUG=-all WINELOADER="$wine" DISPLAY=
wineserver=$(dirname "$wine")/wineserver
rm -rf "$WINEPREFIX"
"$wine" wineboot -i >/dev/null 2>&1
"$wineserver" -w
# One server for the whole run: each program then starts in milliseconds.
"$wineserver" -p
trap '"$wineserver" -k 2>/dev/null' EXIT
out="$top/$win/out"
rm -rf "$out" && mkdir -p "$out"
# Runs a program (under wine when it is a .exe) with its stdout in LOG
# and its stderr in LOG.err, both without Windows' \r.
run() { # log, program, args...
  log=$1
  shift
  case $1 in *.exe) set -- "$wine" "$@" ;; esac
  timeout 600 "$@" >"$log.raw" 2>"$log.err.raw"
  rc=$?
  tr -d '\r' <"$log.raw" >"$log"
  tr -d '\r' <"$log.err.raw" >"$log.err"
  return $rc
}

# ---- the C tests: cmocka's own counts ----
for t in "$@"; do
  name=$(basename "$t" .exe)
  run "$out/$name.log" "$t"
  rc=$?
  cat "$out/$name.log.err" >>"$out/$name.log"
  passed=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$out/$name.log" | awk '{s += $1} END {print s + 0}')
  failed=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$out/$name.log" | awk '{s += $1} END {print s + 0}')
  if [ $rc -eq 0 ] && [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]; then
    ok "$name ($passed cases)" "$passed"
  else
    [ "$failed" -eq 0 ] && failed=1 # it crashed or hung before cmocka's summary
    pass=$((pass + passed))
    bad "$name (exit $rc, $passed passed, $failed failed)" "$out/$name.log" "$failed"
  fi
done

# ---- the script tests: weft test's own counts ----
run "$out/lua.log" "$win/weft.exe" test tests/lua scripts
rc=$?
cat "$out/lua.log.err" >>"$out/lua.log"
last=$(grep '^[0-9]* passed, [0-9]* failed$' "$out/lua.log" | tail -1)
passed=${last%% *}
failed=$(echo "$last" | sed 's/.*, \([0-9]*\) failed/\1/')
if [ $rc -eq 0 ] && [ -n "$last" ] && [ "$failed" -eq 0 ]; then
  ok "weft.exe test tests/lua scripts ($passed cases)" "$passed"
else
  pass=$((pass + ${passed:-0}))
  bad "weft.exe test tests/lua scripts (exit $rc: ${last:-no summary})" "$out/lua.log" "${failed:-1}"
fi

# ---- the embedding example ----
(cd examples/embed && run "$out/embed.log" "$top/$win/embed.exe")
rc=$?
cat "$out/embed.log.err" >>"$out/embed.log"
if [ $rc -eq 0 ] && grep -q '^the door is open at frame 2$' "$out/embed.log" &&
   grep -q '^weft .*: script done$' "$out/embed.log"; then
  ok "examples/embed: the C verb's future, completed later, resumes the script"
else
  bad "examples/embed (exit $rc)" "$out/embed.log"
fi

# ---- recordings: Linux to Windows, and back ----
# tests/windows/scene (modules, weft.start, signals, a channel, a job on
# the worker threads, random numbers, the wall clock) and sample.lua
# (timers, every), recorded on the virtual clock. A replay prints on
# stdout what the recorded run printed; stderr says how it went.
replays() { # name, recording weft, replaying weft, what runs, scripts root
  name=$(echo "$1" | tr ' ,' '__')
  rec="$out/$name.weftrec"
  run "$out/$name.rec" "$2" run "$4" --scripts "$5" --record "$rec"
  if [ ! -s "$rec" ]; then
    cat "$out/$name.rec.err" >>"$out/$name.rec"
    bad "$1: $2 records $4" "$out/$name.rec"
    return
  fi
  run "$out/$name.replay" "$3" run --replay "$rec" --verify
  rc=$?
  if [ $rc -eq 0 ] && cmp -s "$out/$name.rec" "$out/$name.replay" &&
     grep -q '^weft: replayed [0-9]* frames, each as recorded$' "$out/$name.replay.err"; then
    ok "$1: every frame verified, the same output"
  else
    { diff "$out/$name.rec" "$out/$name.replay"; cat "$out/$name.replay.err"; } >"$out/$name.diff" 2>&1
    bad "$1 (exit $rc)" "$out/$name.diff"
  fi
}
replays "scene recorded on Linux, replayed by weft.exe" "$linux_weft" "$win/weft.exe" \
  tests/windows/scene/main.lua tests/windows/scene
replays "sample.lua recorded on Linux, replayed by weft.exe" "$linux_weft" "$win/weft.exe" \
  scripts/sample.lua scripts
replays "scene recorded by weft.exe, replayed on Linux" "$win/weft.exe" "$linux_weft" \
  tests/windows/scene/main.lua tests/windows/scene

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
