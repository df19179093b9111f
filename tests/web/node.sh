#!/bin/sh
# The web build under node (make test-web): weft test tests/lua scripts
# (build-web/weft.js); the demo's end-to-end tests, every
# tests/demo/*_test.lua headless as tests/demo/run.sh runs it natively,
# the behaviours' unit tests, and recordings crossing between the native
# demo and the WebAssembly one (replayed with --verify).
# What does not run here, and why:
#   - the tests in a window under Xvfb (tests/demo/run.sh's last cases,
#     the live tests of tests/demo/live.sh, replay.sh's windowed and
#     xdotool cases): a window needs the page, where tests/web/page_test.js
#     drives the game in Chromium instead;
#   - the source layout, luacheck and the declared verbs: they read the
#     source, not a program, and make test-demo runs them.
# Tests listed in tests/web/expected.txt are expected to fail here, each
# with its reason; one that passes is said so.
# Usage: tests/web/node.sh build-web build
web=${1:-build-web}
native=${2:-build}
demo="node $web/weft-demo-node.js"
weft="node $web/weft.js"
out=$web/demo-test
mkdir -p "$out" build/demo-test
pass=0
fail=0
expected() { grep -q "^$1 " tests/web/expected.txt; }
why() { grep "^$1 " tests/web/expected.txt | cut -d' ' -f2-; }
ok() { pass=$((pass + 1)); echo "ok    $1"; expected "$1" && echo "      (listed in tests/web/expected.txt: it passes now)"; }
bad() {
  if expected "$1"; then
    echo "xfail $1: $(why "$1")"
  else
    fail=$((fail + 1)); echo "FAIL  $1"; [ -n "$2" ] && sed 's/^/      /' "$2" | tail -n 25
  fi
}

# weft test: each failing case must be one expected.txt lists by file:line.
$weft test tests/lua scripts >"$out/weft_test.log" 2>&1
for case in $(sed -n 's/^FAIL \([^ ]*:[0-9]*\): .*/\1/p' "$out/weft_test.log"); do
  bad "$case" "$out/weft_test.log"
done
summary=$(tail -1 "$out/weft_test.log")
case "$summary" in
  *" passed, "*" failed") ok "weft test tests/lua scripts: $summary" ;;
  *) bad "weft test tests/lua scripts ran to its end" "$out/weft_test.log" ;;
esac

if $weft test tests/demo/unit --scripts scripts >"$out/unit.log" 2>&1; then
  ok "unit $(tail -1 "$out/unit.log")"
else
  bad unit "$out/unit.log"
fi

for t in tests/demo/*_test.lua; do
  name=$(basename "$t" .lua)
  log="$out/$name.log"
  if timeout 300 $demo --headless --seed 7 --frames 9000 --script "$t" >"$log" 2>&1; then
    ok "$name"
  else
    bad "$name" "$log"
  fi
done

# A recording crosses over: made by the native demo, replayed by the
# WebAssembly one frame for frame, and the other way.
if [ -x "$native/weft-demo" ]; then
  if timeout 120 "$native/weft-demo" --headless --seed 3 --frames 600 --record "$out/native.tape" \
       >"$out/native_rec.log" 2>&1; [ -s "$out/native.tape" ] &&
     timeout 300 $demo --headless --replay "$out/native.tape" --verify >"$out/native_replay.log" 2>&1 &&
     grep -q "replayed 600 frames, each as recorded" "$out/native_replay.log"; then
    ok "a native recording replays under node frame for frame"
  else
    bad "a native recording replays under node frame for frame" "$out/native_replay.log"
  fi
  if timeout 300 $demo --headless --seed 3 --frames 600 --record "$out/web.tape" >"$out/web_rec.log" 2>&1;
     [ -s "$out/web.tape" ] &&
     timeout 120 "$native/weft-demo" --headless --replay "$out/web.tape" --verify >"$out/web_replay.log" 2>&1 &&
     grep -q "replayed 600 frames, each as recorded" "$out/web_replay.log"; then
    ok "a recording made under node replays natively frame for frame"
  else
    bad "a recording made under node replays natively frame for frame" "$out/web_replay.log"
  fi
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
