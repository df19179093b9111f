#!/bin/sh
# Runs a test script against a copy of the game with hot reload on, and
# saves files when it asks: a line "SAVE DEST SRC" in the game's output
# saves the repository's SRC as DEST in the copy (DEST relative to the
# copy's root, an atomic save by rename, as editors make), once each.
# Files under tests/demo/live/scripts/ are put in the copy
# before the game starts, and so is each line "-- start with: DEST SRC"
# of the test (SRC copied as DEST: a file broken from the start). A test
# with a line "-- live: in a window" (or any with LIVE_WINDOW=1) runs the
# game in a real window under Xvfb, at real time; the others headless.
# Exit status: the game's.
# Usage: tests/demo/live.sh build/weft-demo TEST.lua LOG [more weft-demo options]
demo=$1 test=$2 log=$3
shift 3
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
cp -r scripts "$tmp/scripts" && ln -s "$(pwd)/assets" "$tmp/assets" || exit 1
[ -d tests/demo/live/scripts ] && cp -r tests/demo/live/scripts/. "$tmp/scripts/"
sed -n 's/^-- start with: *\([^ ]*\) *\([^ ]*\) *$/\1 \2/p' "$test" | while read -r dest src; do
  mkdir -p "$(dirname "$tmp/$dest")" && cp "$src" "$tmp/$dest"
done
: >"$log"
grep -q '^-- live: in a window' "$test" && LIVE_WINDOW=1
if [ "${LIVE_WINDOW:-0}" = 1 ] && command -v xvfb-run >/dev/null 2>&1; then
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
    timeout 120 xvfb-run -a ${LIVE_DISPLAY:+-n "$LIVE_DISPLAY"} -s "-screen 0 1280x720x24" \
      "$demo" --watch --root "$tmp" --seed 7 \
      --script "$test" "$@" >"$log" 2>&1 &
else
  timeout 120 "$demo" --headless --watch --root "$tmp" --seed 7 --frames 50000000 \
    --script "$test" "$@" >"$log" 2>&1 &
fi
pid=$!
done_n=0
while kill -0 $pid 2>/dev/null; do
  total=$(grep -c '^SAVE ' "$log")
  if [ "$total" -gt "$done_n" ]; then
    grep '^SAVE ' "$log" | sed -n "$((done_n + 1)),${total}p" | while read -r _ dest src; do
      cp "$src" "$tmp/$dest.new" && mv "$tmp/$dest.new" "$tmp/$dest"
    done
    done_n=$total
  fi
  sleep 0.1
done
wait $pid
