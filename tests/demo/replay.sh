#!/bin/sh
# Record and replay, end to end: a session recorded headless (driven by a
# test script) replays with --verify to the same final picture, byte for
# byte; a replay after the scripts were edited on disk still plays the
# recorded ones; a windowed session recorded in real time under Xvfb with
# a hot reload in the middle replays headless and verifies; every kind of
# bad file exits 1 with a message.
# Usage: tests/demo/replay.sh build/weft-demo
demo=${1:-build/weft-demo}
out=$(dirname "$demo")/demo-test/replay
rm -rf "$out"
mkdir -p "$out" build/demo-test
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0

ok() { pass=$((pass + 1)); echo "ok    $1"; }
bad() { fail=$((fail + 1)); echo "FAIL  $1"; [ -n "$2" ] && sed 's/^/      /' "$2" | tail -n 25; }

# A copy of the game whose scripts the tests edit.
cp -r scripts "$tmp/scripts" && ln -s "$(pwd)/assets" "$tmp/assets"

# 1. headless, driven by a test script; the replay's last frame is the
#    recorded one, byte for byte
if timeout 120 "$demo" --headless --root "$tmp" --seed 5 --script tests/demo/chase_test.lua \
     --record "$out/chase.tape" --screenshot "$out/recorded.png" >"$out/record.log" 2>&1; then
  ok "a headless session driven by a test script is recorded"
else
  bad "a headless session driven by a test script is recorded" "$out/record.log"
fi
if timeout 120 "$demo" --headless --root "$tmp" --replay "$out/chase.tape" --verify \
     --screenshot "$out/replayed.png" >"$out/replay.log" 2>&1 &&
   grep -q "replayed [0-9]* frames, each as recorded" "$out/replay.log" &&
   cmp -s "$out/recorded.png" "$out/replayed.png"; then
  ok "its replay verifies and ends on the same picture, byte for byte"
else
  bad "its replay verifies and ends on the same picture, byte for byte" "$out/replay.log"
fi

# 2. the scripts change on disk: the replay still plays the recorded ones
printf 'local M = {\n  broken = \n' >"$tmp/scripts/ai/patrol.lua"
printf 'error("edited")\n' >"$tmp/scripts/main.lua"
if timeout 120 "$demo" --headless --root "$tmp" --replay "$out/chase.tape" --verify \
     --screenshot "$out/edited.png" >"$out/edited.log" 2>&1 &&
   cmp -s "$out/recorded.png" "$out/edited.png"; then
  ok "a replay after the scripts were edited on disk plays the recorded versions"
else
  bad "a replay after the scripts were edited on disk plays the recorded versions" "$out/edited.log"
fi
rm -rf "$tmp/scripts" && cp -r scripts "$tmp/scripts"

# 2b. the level is in the recording: a receiver whose castle.level differs
#     (a guard moved) still replays it exactly; and so is --play
mkdir -p "$tmp/other/assets"
cp -r scripts "$tmp/other/scripts" && cp assets/*.png "$tmp/other/assets/"
sed 's/^gate_guard  *guard  *[0-9.]*  *[0-9.]*/gate_guard  guard    24    29/' assets/castle.level \
  >"$tmp/other/assets/castle.level"
if ! cmp -s assets/castle.level "$tmp/other/assets/castle.level" &&
   timeout 120 "$demo" --headless --root "$tmp/other" --replay "$out/chase.tape" --verify \
     >"$out/other_level.log" 2>&1 &&
   grep -q "replayed [0-9]* frames, each as recorded" "$out/other_level.log"; then
  ok "a replay with another castle.level on disk plays the recorded level"
else
  bad "a replay with another castle.level on disk plays the recorded level" "$out/other_level.log"
fi
if timeout 120 "$demo" --headless --root "$tmp" --seed 2 --frames 400 --play cinematics.vault \
     --record "$out/play.tape" >"$out/play_record.log" 2>&1 &&
   timeout 120 "$demo" --headless --root "$tmp/other" --replay "$out/play.tape" --verify \
     >"$out/play_replay.log" 2>&1; then
  ok "a session started with --play replays as recorded"
else
  bad "a session started with --play replays as recorded" "$out/play_replay.log"
fi

# 2c. headless, --goto N stops the replay at frame N
if timeout 120 "$demo" --headless --root "$tmp" --replay "$out/chase.tape" --goto 100 \
     >"$out/goto.log" 2>&1 && grep -q "stopped at frame 100 of" "$out/goto.log"; then
  ok "a headless replay with --goto 100 stops at frame 100"
else
  bad "a headless replay with --goto 100 stops at frame 100" "$out/goto.log"
fi

# 3. a minute of play stays small
if "$demo" --headless --root "$tmp" --frames 3600 --record "$out/minute.tape" >/dev/null 2>&1 &&
   size=$(wc -c <"$out/minute.tape") && [ "$size" -lt 102400 ]; then
  ok "a minute of play records into $size bytes (< 100 KB)"
else
  bad "a minute of play records into less than 100 KB (got ${size:-nothing})"
fi

# 4. a windowed session at real time under Xvfb, with a hot reload in the
#    middle (tests/demo/reload.lua asks for the saves), replayed headless
if command -v xvfb-run >/dev/null 2>&1; then
  log="$out/window_record.log"
  : >"$log"
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
    timeout 120 xvfb-run -a -s "-screen 0 1280x720x24" "$demo" --watch --root "$tmp" --seed 7 \
      --record "$out/window.tape" --script tests/demo/reload.lua >"$log" 2>&1 &
  pid=$!
  sh tests/demo/reload_saves.sh "$log" "$tmp"
  if wait $pid; then
    ok "a windowed session at real time with a hot reload is recorded"
  else
    bad "a windowed session at real time with a hot reload is recorded" "$log"
  fi
  rm -rf "$tmp/scripts" && cp -r scripts "$tmp/scripts"
  if timeout 120 "$demo" --headless --root "$tmp" --replay "$out/window.tape" --verify \
       >"$out/window_replay.log" 2>&1 &&
     grep -q "reload: ai.patrol v2" "$out/window_replay.log" &&
     grep -q "replayed [0-9]* frames, each as recorded" "$out/window_replay.log"; then
    ok "it replays headless with the reload in its frame and verifies"
  else
    bad "it replays headless with the reload in its frame and verifies" "$out/window_replay.log"
  fi
fi

# 4b. a windowed session that used the console (keys sent with xdotool):
#     the intro skipped, Wren teleported from the console, a line that
#     waits, Ctrl-R; the lines and the reset are in the recording, and
#     the replay runs them in their frames: it verifies, and --goto past
#     them stops there
if command -v xvfb-run >/dev/null 2>&1 && command -v xdotool >/dev/null 2>&1; then
  cat >"$tmp/console.sh" <<'EOF'
demo=$1 tape=$2 root=$3 log=$4
"$demo" --no-watch --root "$root" --seed 7 --record "$tape" >"$log" 2>&1 &
pid=$!
win=
n=0
until [ -n "$win" ] || [ $n -ge 600 ]; do
  win=$(xdotool search --name Moonwatch 2>/dev/null | head -1); sleep 0.1; n=$((n + 1))
done
# Each step waits for the demo to say the last one landed, never for a
# fixed time alone: on a busy machine a line may take seconds to run.
said() { n=0; until grep -qF -- "$1" "$log" || [ $n -ge 600 ]; do sleep 0.1; n=$((n + 1)); done; }
keys() { sleep 0.7; xdotool windowfocus --sync "$win" 2>/dev/null; xdotool key --delay 120 "$@"; }
line() { keys grave; sleep 0.3; xdotool type --delay 30 "$1"; keys Return; said "console: > $1"; keys grave; }
sleep 2
keys Escape
sleep 1
line 'player():teleport(tile(33, 22))'
line 'x = 5'
line 'wait(1) return x + 1'
said "console: 6"
keys ctrl+r
said "reset at frame"
sleep 1
line 'entity("gate_guard"):teleport(tile(30, 31))'
sleep 1
keys ctrl+q
wait $pid
EOF
  log="$out/console_record.log"
  if ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
       timeout 180 xvfb-run -a -s "-screen 0 1280x720x24" sh "$tmp/console.sh" "$demo" \
         "$out/console.tape" "$tmp" "$log" >"$log.xvfb" 2>&1 &&
     grep -q "^console: 6$" "$log" && grep -q "reset at frame" "$log"; then
    ok "a windowed session with console lines and Ctrl-R is recorded"
  else
    bad "a windowed session with console lines and Ctrl-R is recorded" "$log"
  fi
  frames=$(sed -n 's/.*reset at frame \([0-9]*\).*/\1/p' "$log" | head -1)
  if timeout 120 "$demo" --headless --root "$tmp" --replay "$out/console.tape" --verify \
       >"$out/console_replay.log" 2>&1 &&
     grep -q "replayed [0-9]* frames, each as recorded" "$out/console_replay.log" &&
     grep -q "^console: > player():teleport(tile(33, 22))   (recorded)$" "$out/console_replay.log" &&
     grep -q "^console: 6$" "$out/console_replay.log"; then
    ok "it replays with the console lines and the reset in their frames and verifies"
  else
    bad "it replays with the console lines and the reset in their frames and verifies" \
      "$out/console_replay.log"
  fi
  to=$((${frames:-0} + 60))
  if timeout 120 "$demo" --headless --root "$tmp" --replay "$out/console.tape" --goto "$to" \
       >"$out/console_goto.log" 2>&1 && grep -q "stopped at frame $to of" "$out/console_goto.log"; then
    ok "--goto $to, past the lines and the reset, stops there"
  else
    bad "--goto $to, past the lines and the reset, stops there" "$out/console_goto.log"
  fi
fi

# 5. the viewer's keys in a windowed replay (keys sent with xdotool):
#    --goto 200 starts paused; F6 three times steps to 203; F8 jumps five
#    seconds ahead (503); F7 starts again and runs back to 203; Ctrl-Q quits
if command -v xvfb-run >/dev/null 2>&1 && command -v xdotool >/dev/null 2>&1; then
  cat >"$tmp/scrub.sh" <<'EOF'
demo=$1 tape=$2 shot=$3 log=$4
"$demo" --replay "$tape" --goto 200 --screenshot "$shot" >"$log" 2>&1 &
pid=$!
# Waits for what the demo shows, never for a fixed time: a busy machine
# may take seconds to open a window or to replay 200 frames.
window() { # the Moonwatch window, once there is one
  n=0 win=
  until [ -n "$win" ] || [ $n -ge 600 ]; do
    sleep 0.1; n=$((n + 1)); win=$(xdotool search --onlyvisible --name Moonwatch 2>/dev/null | head -1)
  done
}
said() { n=0; until grep -q "$1" "$log" || [ $n -ge 600 ]; do sleep 0.1; n=$((n + 1)); done; }
keys() { sleep 1; xdotool windowfocus --sync "$win" 2>/dev/null; xdotool key --delay 150 "$@"; }
window
keys F6 F6 F6
keys F8
keys F7
said "stopped at frame 503"
sleep 2
window # F7 replays from the start in a new window
keys F12
keys F1 F2
keys grave
sleep 0.5; xdotool type --delay 50 'player().kind'
keys Return
keys grave
keys ctrl+q
wait $pid
cat "$log"
EOF
  here=$(pwd)
  rm -f "$out"/weft-demo-*.png
  if (cd "$out" && ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
     timeout 180 xvfb-run -a -s "-screen 0 1280x720x24" sh "$tmp/scrub.sh" "$here/$demo" \
       "$here/$out/minute.tape" "$here/$out/scrub.png" "$here/$out/scrub.demo.log" \
       >"$here/$out/scrub.log" 2>&1) &&
     grep -q "stopped at frame 503 of 3600" "$out/scrub.log" &&
     grep -q "stopped at frame 203 of 3600" "$out/scrub.log" && [ -s "$out/scrub.png" ]; then
    ok "a windowed replay pauses, steps, jumps ahead and back (F5-F8)"
  else
    bad "a windowed replay pauses, steps, jumps ahead and back (F5-F8)" "$out/scrub.log"
  fi
  # F12 saved frame 203 as it was; F1 and F2 then put the inspector and
  # the frame graph over the same frame (the picture at the end)
  pngstat=$(dirname "$demo")/weft-pngstat
  if [ -s "$out/weft-demo-000203.png" ] && a=$("$pngstat" "$out/weft-demo-000203.png") &&
     b=$("$pngstat" "$out/scrub.png") && [ "$a" != "$b" ]; then
    ok "in a windowed replay F12 saves the frame and F1/F2 show the overlays ($a / $b)"
  else
    bad "in a windowed replay F12 saves the frame and F1/F2 show the overlays" "$out/scrub.log"
  fi
  if grep -q "^console: hero$" "$out/scrub.log"; then
    ok "the console reads the replayed state (player().kind printed hero)"
  else
    bad "the console reads the replayed state" "$out/scrub.log"
  fi
fi

# 6. bad files: each exits 1 with what is wrong
bad_file() { # name, file, expected message (grep pattern)
  if "$demo" --headless --replay "$2" >"$out/bad.log" 2>&1; then
    bad "$1: exits 1" "$out/bad.log"
  elif grep -q "$3" "$out/bad.log"; then
    ok "$1: exits 1 saying \"$(head -1 "$out/bad.log" | cut -c1-70)\""
  else
    bad "$1: says $3" "$out/bad.log"
  fi
}
head -c 3000 "$out/chase.tape" >"$out/cut.tape"
bad_file "a truncated recording" "$out/cut.tape" "truncated"
cp "$out/chase.tape" "$out/flip.tape"
printf 'X' | dd of="$out/flip.tape" bs=1 seek=2000 conv=notrunc 2>/dev/null
bad_file "a corrupted recording" "$out/flip.tape" "corrupted"
cp "$out/chase.tape" "$out/v9.tape"
# the version follows "WEFTREC" + 'H' and the header's length (a varint)
at=9
while [ "$(od -An -tu1 -j$at -N1 "$out/v9.tape" | tr -d ' ')" -ge 128 ]; do at=$((at + 1)); done
printf '\011' | dd of="$out/v9.tape" bs=1 seek=$((at + 1)) conv=notrunc 2>/dev/null
bad_file "a recording of another format version" "$out/v9.tape" "format version 9"
bad_file "a file that is no recording" scripts/main.lua "not a weft recording"
bad_file "a missing file" "$out/none.tape" "cannot open"
printf 'wait(0.1)\n' >"$tmp/plain.lua"
"$(dirname "$demo")/weft" run "$tmp/plain.lua" --record "$out/plain.tape" >/dev/null 2>&1
bad_file "a recording of weft run" "$out/plain.tape" "not recorded by weft-demo"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
