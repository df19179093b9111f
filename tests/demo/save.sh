#!/bin/sh
# Quicksave, quickload and rewind end to end (demo/savegame.c). Headless,
# a seeded run prints a line a frame of what the game shows
# (tests/demo/save/trace.lua) and presses F9 mid-cinematic, or mid-chase:
# - a run that saves plays every frame as a run that never saves;
# - weft-demo --load in a new process goes on from the save with the
#   same lines and the same pictures (F12's, taken between frames) as
#   the run that saved, to the end of the cinematic and beyond;
# - F10 in the same process does the same;
# - every scene saves and loads back (or says why it cannot, on screen),
#   damaged saves are refused with the reason and the game goes on.
# Under Xvfb, in a real window, Backspace goes back 5 s: the pictures
# after it show the frames of 5 s before, and the frames after it
# repeat the ones played the first time.
# Usage: tests/demo/save.sh build/weft-demo [build/weft-pngstat]
demo=${1:-build/weft-demo}
pngstat=${2:-$(dirname "$demo")/weft-pngstat}
root=$(pwd)
case "$demo" in /*) ;; *) demo=$root/$demo ;; esac
case "$pngstat" in /*) ;; *) pngstat=$root/$pngstat ;; esac
out=$(dirname "$demo")/demo-test/save
rm -rf "$out"
mkdir -p "$out"
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok    $1"; }
bad() { fail=$((fail + 1)); echo "FAIL  $1"; [ -n "$2" ] && sed 's/^/      /' "$2" | tail -n 25; }

# run DIR ARGS...: the demo in $out/DIR (F9, F10 and F12 write there),
# its budgets counted: the frames are the same on a busy machine (a
# watched budget may preempt a script a frame later when the processor
# is shared)
run() {
  d=$out/$1
  shift
  mkdir -p "$d"
  (cd "$d" && timeout 120 "$demo" --root "$root" --budget 1000000 "$@" >out.txt 2>err.txt)
}
# variant NAME SAVE_AT LOAD_AT: trace.lua with those frames
variant() {
  sed -e "s/^local SAVE_AT = [0-9]*/local SAVE_AT = $2/" -e "s/^local LOAD_AT = [0-9]*/local LOAD_AT = $3/" \
    tests/demo/save/trace.lua >"$out/$1.lua"
}
trace() { grep '^T ' "$out/$1/out.txt"; }
after() { trace "$1" | awk -v f="$2" '$2 > f'; }
# the pictures of two runs: the same, but for the note at the top right
# (rows 52 to 81: "saved frame ...", "loaded frame ...") while it shows
same_shots() { # dir-a dir-b frames...
  a=$1 b=$2
  shift 2
  for f in "$@"; do
    [ -s "$out/$a/weft-demo-00$f.png" ] && [ -s "$out/$b/weft-demo-00$f.png" ] || return 1
    set -- $("$pngstat" "$out/$a/weft-demo-00$f.png" "$out/$b/weft-demo-00$f.png") || return 1
    [ "$1" = 0 ] || { [ "$3" -ge 52 ] && [ $(($3 + $5)) -le 82 ]; } || return 1
  done
}

# ---- a save mid-line, and a save that never happens ----
variant saves 1700 0
variant never 0 0
run saves --headless --seed 7 --frames 3200 --script "$out/saves.lua"
run never --headless --seed 7 --frames 3200 --script "$out/never.lua"
if [ "$(trace saves | wc -l)" -ge 3100 ] && trace saves >"$out/saves.t" && trace never | cmp -s - "$out/saves.t" &&
   same_shots saves never 1720 1850 2300 2860 3050; then
  ok "a run that saves mid-cinematic plays every frame as one that never saves"
else
  bad "a run that saves mid-cinematic plays every frame as one that never saves" "$out/saves/err.txt"
fi
head -c 40 "$out/saves/weft-demo.save" >/dev/null 2>&1 &&
  echo "      the save at frame 1700: $(wc -c <"$out/saves/weft-demo.save") bytes; $(grep -o 'saved frame 1700[^)]*)' "$out/saves/err.txt")"

# ---- --load in a new process ----
run loaded --headless --load "$out/saves/weft-demo.save" --frames 3200
after saves 1700 >"$out/saves_after.t"
after loaded 1700 >"$out/loaded.t"
if [ "$(wc -l <"$out/loaded.t")" -ge 1400 ] && cmp -s "$out/saves_after.t" "$out/loaded.t" &&
   grep -q '^T 1701 .*Wren|He left the gate open' "$out/loaded.t" &&
   same_shots saves loaded 1720 1850 2300 2860 3050 && grep -q "test script passed" "$out/loaded/err.txt"; then
  ok "--load in a new process: Wren's line, the captain's walk and the patrols go on, frame for frame"
else
  bad "--load in a new process: the same frames as the run that saved" "$out/loaded/err.txt"
fi

# ---- mid-chase ----
variant chase 2830 0
run chase --headless --seed 7 --frames 3200 --script "$out/chase.lua"
run chase_loaded --headless --load "$out/chase/weft-demo.save" --frames 3200
if grep -q '^T 2830 .*gate_guard@[^ ]*:alert:' "$out/chase/out.txt" &&
   after chase 2830 >"$out/chase.t" && after chase_loaded 2830 | cmp -s - "$out/chase.t" &&
   [ "$(wc -l <"$out/chase.t")" -ge 250 ] && grep -q 'Not so fast' "$out/chase.t" &&
   same_shots chase chase_loaded 2860 3050; then
  ok "a guard saved mid-chase goes on chasing, on his patrol leg, and catches Wren on the same frame"
else
  bad "a guard saved mid-chase goes on chasing after --load" "$out/chase_loaded/err.txt"
fi

# ---- F10 in the same process ----
variant quickload 1700 1800
run quickload --headless --seed 7 --frames 3200 --script "$out/quickload.lua"
n=$(grep -n '^T 1701 ' "$out/quickload/out.txt" | tail -1 | cut -d: -f1)
if [ "$(grep -c '^T 1701 ' "$out/quickload/out.txt")" = 2 ] &&
   tail -n +"$n" "$out/quickload/out.txt" | grep '^T ' | cmp -s - "$out/saves_after.t" &&
   grep -q 'loaded frame 1700' "$out/quickload/err.txt"; then
  ok "F10 in the same process goes back to frame 1700 and plays the same frames again"
else
  bad "F10 in the same process goes back to frame 1700 and plays the same frames again" "$out/quickload/err.txt"
fi

# ---- every scene ----
for play in "" cinematics.vault cinematics.sage cinematics.ending; do
  name=scenes_${play#cinematics.}
  if run "$name" --headless --seed 7 --frames 6000 ${play:+--play $play} \
       --script "$root/tests/demo/save/scenes.lua" &&
     ! grep -q 'NOT SHOWN' "$out/$name/out.txt"; then
    ok "F9 then F10 in every scene${play:+ of $play}: $(grep -c '^SCENE.*saved and loaded' "$out/$name/out.txt") saved and loaded, $(grep -c '^SCENE.*not saved' "$out/$name/out.txt") refused with the reason shown"
  else
    bad "F9 then F10 in every scene${play:+ of $play}" "$out/$name/err.txt"
  fi
  grep '^SCENE' "$out/$name/out.txt" | sed 's/^SCENE\t/      /; s/\t/ /g'
done

# ---- saves that are not: refused with the reason ----
s=$out/saves/weft-demo.save
head -c 5000 "$s" >"$out/cut.save"
{ head -c 20000 "$s"; printf 'X'; tail -c +20002 "$s"; } >"$out/changed.save"
echo "not a save" >"$out/text.save"
for f in cut changed text missing; do
  run "bad_$f" --headless --load "$out/$f.save" --frames 10
  rc=$?
  if [ $rc = 1 ] && grep -q "^weft-demo: --load .*$f.save: \(bad save\|cannot read\)" "$out/bad_$f/err.txt"; then
    ok "--load refuses a $f save with its reason: $(sed -n 's/.*save: //p' "$out/bad_$f/err.txt" | head -1)"
  else
    bad "--load refuses a $f save with its reason (exit $rc)" "$out/bad_$f/err.txt"
  fi
done
cp "$out/changed.save" "$out/quick.save"
cat >"$out/bad_f10.lua" <<'EOF'
local check = require("lib.check")
check.skip_intro()
local at = player():position()
hold("d", 1)
wait(0.5)
tap("f10")
wait()
local s = game_state().save
check.expect(s.what == "load" and not s.ok and s.why:find("checksum"), "F10 refuses a damaged save: " .. tostring(s.why))
local shown = false
for _, e in ipairs(errors(true)) do shown = shown or (e.warning == "load" and e.message:find("checksum") ~= nil) end
check.expect(shown, "the panel says why")
wait(1)
check.expect(check.dist(at, player():position()) > 30, "the game went on: Wren walked on")
EOF
if run bad_f10 --headless --seed 7 --frames 9000 --save "$out/quick.save" --script "$out/bad_f10.lua"; then
  ok "F10 of a damaged save: \"Not loaded\" and why in the panel, the game goes on"
else
  bad "F10 of a damaged save: \"Not loaded\" and why in the panel, the game goes on" "$out/bad_f10/err.txt"
fi

# ---- Backspace in a real window ----
if command -v xvfb-run >/dev/null 2>&1; then
  d=$out/rewind
  mkdir -p "$d"
  if (cd "$d" && ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
        timeout 120 xvfb-run -a -s "-screen 0 1280x720x24" "$demo" --root "$root" --budget 1000000 \
        --no-watch --seed 7 \
        --frames 9000 --script "$root/tests/demo/save/rewind.lua" >out.txt 2>err.txt) &&
     back=$(sed -n 's/^REWOUND from [0-9]* to \([0-9]*\) .*/\1/p' "$d/out.txt") && [ -n "$back" ] &&
     [ "$back" -le 380 ] && [ "$back" -ge 320 ] &&
     awk '/^P /{ n[$2]++; if (n[$2] == 1) a[$2] = $0; else { twice++; if (a[$2] != $0) bad++ } }
          END { exit !(twice >= 300 && bad == 0) }' "$d/out.txt"; then
    f=$(printf '%06d' $((back + 1)))
    moved=$("$pngstat" "$d/weft-demo-000661.png" "$d/weft-demo-$f-2.png")
    note=$("$pngstat" "$d/weft-demo-$f.png" "$d/weft-demo-$f-2.png")
    later=$("$pngstat" "$d/weft-demo-000661.png" "$d/weft-demo-000661-2.png")
    set -- $moved
    m=$1
    set -- $note
    if [ "$m" -gt 100000 ] && { [ "$1" = 0 ] || { [ "$3" -ge 52 ] && [ $(($3 + $5)) -le 82 ]; }; } &&
       [ "$later" = "0 0 0 0 0" ]; then
      ok "Backspace in a window: back to frame $back, the picture 5 s back ($m pixels moved), the same frames again after"
    else
      bad "Backspace in a window: pictures (moved: $moved; frame $((back + 1)) again: $note; 661 again: $later)"
    fi
  else
    bad "Backspace in a window goes back 5 s and plays the same frames again" "$d/err.txt"
  fi
  sed -n 's/^RING /      the ring before Backspace: /p' "$d/out.txt"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
