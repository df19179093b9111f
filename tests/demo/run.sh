#!/bin/sh
# End-to-end tests of the demo, run headless (software renderer, fixed
# 1/60 s step, seeded): every tests/demo/*_test.lua drives the game as a
# player would, then the screenshots are checked by their pixel statistics.
# Usage: tests/demo/run.sh build/weft-demo [build/weft-pngstat]
demo=${1:-build/weft-demo}
pngstat=${2:-$(dirname "$demo")/weft-pngstat}
out=$(dirname "$demo")/demo-test
mkdir -p "$out" build/demo-test   # the test scripts save screenshots in build/demo-test/
rm -rf build/demo-test/at_call_*.png build/demo-test/new
pass=0
fail=0

ok() { pass=$((pass + 1)); echo "ok    $1"; }
bad() { fail=$((fail + 1)); echo "FAIL  $1"; [ -n "$2" ] && sed 's/^/      /' "$2" | tail -n 25; }

# the source: one owner per function, no circles (tests/demo/layout.sh)
if sh tests/demo/layout.sh demo >"$out/layout.log" 2>&1; then
  ok "$(tail -1 "$out/layout.log")"
else
  bad "the demo's source layout" "$out/layout.log"
fi

# editors know the game's verbs (tests/demo/declared.sh)
if sh tests/demo/declared.sh demo >"$out/declared.log" 2>&1; then
  ok "$(tail -1 "$out/declared.log")"
else
  bad "the game's verbs are declared for editors" "$out/declared.log"
fi

# the editor set-up: luacheck (Debian's lua-check) passes on scripts/ with
# scripts/.luacheckrc, which reads the globals from weft.d.lua and
# moonwatch.d.lua; scripts/.luarc.json names both for lua-language-server
if command -v luacheck >/dev/null 2>&1; then
  if luacheck --no-color --config scripts/.luacheckrc scripts >"$out/luacheck.log" 2>&1 &&
     (cd scripts && for f in $(sed -n 's/.*"workspace.library": \[\(.*\)\].*/\1/p' .luarc.json | tr -d '",'); do
        [ -f "$f" ] || exit 1; done); then
    ok "luacheck scripts: $(tail -1 "$out/luacheck.log"); .luarc.json's library files exist"
  else
    bad "luacheck scripts passes; .luarc.json's library files exist" "$out/luacheck.log"
  fi
  # and it knows a verb from a typo
  printf 'local e = player()\nwait(e:move_to(mark("gate")))\nmove_too(e)\n' >"$out/typo.lua"
  if luacheck --no-color --config scripts/.luacheckrc "$out/typo.lua" 2>&1 |
       grep -q "typo.lua:3:1: accessing undefined variable .move_too" &&
     ! luacheck --no-color --config scripts/.luacheckrc "$out/typo.lua" 2>&1 | grep -q "typo.lua:[12]:"; then
    ok "luacheck knows the game's verbs and weft's waits from a typo"
  else
    bad "luacheck knows the game's verbs and weft's waits from a typo"
  fi
else
  bad "luacheck is not installed (make deps installs lua-check)"
fi

# a behaviour's unit tests against fake entities, without the game
weft=$(dirname "$demo")/weft
if "$weft" test tests/demo/unit --scripts scripts >"$out/unit.log" 2>&1; then
  ok "weft test tests/demo/unit: $(tail -1 "$out/unit.log")"
else
  bad "weft test tests/demo/unit (behaviours against lib/fakes.lua)" "$out/unit.log"
fi

for t in tests/demo/*_test.lua; do
  name=$(basename "$t" .lua)
  log="$out/$name.log"
  if timeout 120 "$demo" --headless --seed 7 --frames 9000 --script "$t" >"$log" 2>&1; then
    ok "$name"
  else
    bad "$name" "$log"
  fi
done

# screenshot() draws the frame at the call (tests/demo/screenshot_test.lua):
# the picture taken after pressing F1 differs from the one before, and the
# one taken by the script's last statement exists.
if [ -s build/demo-test/at_call_last.png ] && [ -s build/demo-test/new/dir/made.png ] &&
   a=$("$pngstat" build/demo-test/at_call_without_f1.png) &&
   b=$("$pngstat" build/demo-test/at_call_with_f1.png) && [ "$a" != "$b" ]; then
  ok "screenshot() saves the frame as it is at the call ($a / $b)"
else
  bad "screenshot() saves the frame as it is at the call" "$out/screenshot_test.log"
fi

# --seed picks where each guard heads first: two seeds, two pictures
if [ -n "$(command -v cmp)" ] &&
   "$demo" --headless --frames 2400 --seed 7 --screenshot "$out/seed7.png" >/dev/null 2>&1 &&
   "$demo" --headless --frames 2400 --seed 8 --screenshot "$out/seed8.png" >/dev/null 2>&1 &&
   ! cmp -s "$out/seed7.png" "$out/seed8.png"; then
  ok "--seed 7 and --seed 8 give different pictures at frame 2400"
else
  bad "--seed 7 and --seed 8 give different pictures at frame 2400"
fi

# Hot reload while the game runs: a copy of the game, edited when the test
# script asks (see tests/demo/reload.lua).
reload_test() {
  tmp=$(mktemp -d) || return 1
  cp -r scripts "$tmp/scripts" && ln -s "$(pwd)/assets" "$tmp/assets" || return 1
  log="$out/reload_test.log"
  : >"$log"
  timeout 90 "$demo" --headless --watch --root "$tmp" --seed 7 --frames 50000000 \
    --script tests/demo/reload.lua >"$log" 2>&1 &
  pid=$!
  sh tests/demo/reload_saves.sh "$log" "$tmp"
  wait $pid
  rc=$?
  rm -rf "$tmp"
  return $rc
}
if reload_test; then ok "reload_test"; else bad "reload_test" "$out/reload_test.log"; fi

# make run builds the weft program too (docs/designers.md runs it)
b=$(mktemp -d)
if make -n -B run BUILD="$b" 2>/dev/null | grep -q -- "-o $b/weft "; then
  ok "make run builds build/weft"
else
  bad "make run builds build/weft"
fi
rm -rf "$b"

# --play MODULE: the intro skipped, the cinematic played at once
if timeout 120 "$demo" --headless --seed 7 --frames 9000 --play cinematics.vault \
     --script tests/demo/play/vault.lua >"$out/play_vault.log" 2>&1; then
  ok "--play cinematics.vault plays it once the level is loaded"
else
  bad "--play cinematics.vault plays it once the level is loaded" "$out/play_vault.log"
fi

if timeout 120 "$demo" --headless --seed 7 --frames 9000 --play cinematics.sage \
     --script tests/demo/play/sage_skip.lua >"$out/play_sage_skip.log" 2>&1; then
  ok "skipping a cinematic stops the walks it started (entities it fetched itself too)"
else
  bad "skipping a cinematic stops the walks it started" "$out/play_sage_skip.log"
fi

if timeout 120 "$demo" --headless --seed 7 --frames 9000 --play cinematics.sage --beat advice \
     --script tests/demo/play/beat.lua >"$out/play_beat.log" 2>&1; then
  ok "--play cinematics.sage --beat advice runs unseen to the beat and plays on"
else
  bad "--play cinematics.sage --beat advice runs unseen to the beat and plays on" "$out/play_beat.log"
fi

if timeout 120 "$demo" --headless --seed 7 --frames 9000 --play cinematics.sage --from vault_open \
     --script tests/demo/play/from.lua >"$out/play_from.log" 2>&1; then
  ok "--play cinematics.sage --from vault_open sets up that world state first"
else
  bad "--play cinematics.sage --from vault_open sets up that world state first" "$out/play_from.log"
fi

if timeout 120 "$demo" --headless --seed 7 --frames 9000 --play cinematics.sage \
     --script tests/demo/play/reset_beat.lua >"$out/play_reset_beat.log" 2>&1; then
  ok "reset(\"advice\") in the console starts over and runs unseen to the beat"
else
  bad "reset(\"advice\") in the console starts over and runs unseen to the beat" "$out/play_reset_beat.log"
fi

# F3 pairs: numbered files, none over another; a brain's slices are named
# by its entity and module, not by the line that started it
rm -f "$out"/prof*.json
if timeout 120 "$demo" --headless --seed 7 --frames 9000 --profile "$out/prof.json" \
     --script tests/demo/play/profile_keys.lua >"$out/profile_keys.log" 2>&1 &&
   [ -s "$out/prof.json" ] && [ -s "$out/prof-1.json" ] && [ -s "$out/prof-2.json" ] &&
   [ -s "$out/prof-2.speedscope.json" ] && ! cmp -s "$out/prof-1.json" "$out/prof-2.json" &&
   grep -q '"name":"gate_guard ai.patrol"' "$out/prof-1.json" &&
   grep -q '"module":"ai.patrol"' "$out/prof-1.json"; then
  ok "F3 pairs write prof-1.json and prof-2.json; a brain's slices are \"gate_guard ai.patrol\""
else
  bad "F3 pairs write numbered profiles; brains' slices named by entity and module" "$out/profile_keys.log"
fi

# Tests that save scripts while the game runs (tests/demo/live.sh makes
# the saves each asks for, on a copy of the game). They run at once, each
# on its own copy (and its own X server): those in a window wait on the
# wall clock, not on the processor.
n=0
for t in tests/demo/live/*.lua; do
  [ -f "$t" ] || continue
  name=live_$(basename "$t" .lua)
  n=$((n + 1)) # each looks for a free X server from its own number up: no two race for one
  (LIVE_DISPLAY=$((140 + 3 * n)) sh tests/demo/live.sh "$demo" "$t" "$out/$name.log"
   echo $? >"$out/$name.rc") &
done
wait
for t in tests/demo/live/*.lua; do
  [ -f "$t" ] || continue
  name=live_$(basename "$t" .lua)
  if [ "$(cat "$out/$name.rc" 2>/dev/null)" = 0 ]; then ok "$name"; else bad "$name" "$out/$name.log"; fi
done

# A screenshot of a given frame shows the level: not blank, lit, varied.
# frame 2400: after the intro, the hero at the gate under the torches
shot() { # name frames seed
  "$demo" --headless --frames "$2" --seed "$3" --screenshot "$out/$1.png" >"$out/$1.log" 2>&1 &&
    "$pngstat" "$out/$1.png" 2>>"$out/$1.log"
}
if s=$(shot level 2400 7); then
  set -- $s
  # width height mean stddev colours dark
  if [ "$1" = 1280 ] && [ "$2" = 720 ] &&
     awk -v m="$3" -v sd="$4" -v c="$5" -v d="$6" 'BEGIN { exit !(m > 20 && m < 160 && sd > 12 && c > 300 && d < 0.6) }'; then
    ok "screenshot shows the level (mean $3, stddev $4, $5 colours, dark $6)"
  else
    bad "screenshot shows the level (got: $s)"
  fi
else
  bad "screenshot shows the level" "$out/level.log"
fi

# The same seed gives the same picture (same statistics) on a second run.
if a=$(shot repeat_a 1500 3) && b=$(shot repeat_b 1500 3) && [ "$a" = "$b" ]; then
  ok "a seeded run repeats ($a)"
else
  bad "a seeded run repeats ($a / $b)"
fi

# make run opens a real window: under Xvfb when there is no display.
if command -v xvfb-run >/dev/null 2>&1; then
  # leak checking stays with the headless runs: display drivers loaded
  # under X keep allocations of their own until exit
  if ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
     timeout 120 xvfb-run -a -s "-screen 0 1280x720x24" "$demo" --frames 300 --no-watch \
       --screenshot "$out/window.png" >"$out/window.log" 2>&1 &&
     s=$("$pngstat" "$out/window.png") && set -- $s &&
     awk -v m="$3" -v sd="$4" 'BEGIN { exit !(m > 5 && sd > 5) }'; then
    ok "the game opens a window under Xvfb ($s)"
  else
    bad "the game opens a window under Xvfb" "$out/window.log"
  fi
  # --beat in a window: the 6.5 s before the beat pass unseen, in well
  # under their real time (the window's start included)
  t0=$(date +%s%N)
  if ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
     timeout 120 xvfb-run -a -s "-screen 0 1280x720x24" "$demo" --no-watch --seed 7 \
       --play cinematics.sage --beat advice --script tests/demo/play/beat.lua \
       >"$out/window_beat.log" 2>&1 &&
     ms=$((($(date +%s%N) - t0) / 1000000)) && [ "$ms" -lt 4000 ]; then
    ok "in a window, --beat reaches a beat 6.5 s into the game in $ms ms"
  else
    bad "in a window, --beat reaches a beat 6.5 s into the game in under 4 s (${ms:-?} ms)" "$out/window_beat.log"
  fi
  # the console's scrollback (print, warn, a runaway line) and the reports'
  # lines, in a real window too
  for t in console_test reports_test; do
    if ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
       timeout 120 xvfb-run -a -s "-screen 0 1280x720x24" "$demo" --no-watch --seed 7 --frames 9000 \
         --script "tests/demo/$t.lua" >"$out/window_$t.log" 2>&1; then
      ok "$t in a window under Xvfb"
    else
      bad "$t in a window under Xvfb" "$out/window_$t.log"
    fi
  done
  # every overlay at once in a real window: screenshot() reads the window
  if ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
     timeout 120 xvfb-run -a -s "-screen 0 1280x720x24" "$demo" --no-watch --seed 7 --frames 9000 \
       --script tests/demo/overlays_test.lua >"$out/window_overlays.log" 2>&1; then
    ok "every overlay at once in a window under Xvfb"
  else
    bad "every overlay at once in a window under Xvfb" "$out/window_overlays.log"
  fi
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
