#!/bin/sh
# Saving the running world, through the weft program: a run saved after
# frame N (--save-at N OUT, which goes on) and a run loaded from that
# save (--load OUT) print the same lines after the save, and end the same
# way. Over the programs here, at many frames each, and over random
# programs (gen.lua); then saves that must be refused.
# Usage: tests/save/run.sh WEFT [RANDOM]  (RANDOM programs: default 300)
weft=${1:?usage: tests/save/run.sh WEFT [RANDOM]}
nrandom=${2:-300}
here=$(dirname "$0")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
pass=0
fail=0

# same FILE N: the saved run's lines after its save, and the loaded
# run's, are the same; so are their exit codes.
# Budgets counted in instructions, no frame budget, jobs run on the main
# thread: what a run does does not depend on how fast the machine runs it
# (a watched budget stops a resume at a time, a worker finishes a job
# when it does, and a slow machine's runs part there).
opts="--budget 1000000 --frame-budget off --inline-jobs"
same() {
  "$weft" run "$1" $opts --save-at "$2" "$dir/s.sav" > "$dir/full" 2>&1
  rcf=$?
  "$weft" run --load "$dir/s.sav" $opts > "$dir/post" 2>&1
  rcp=$?
  if ! grep -q '^weft: saved after frame' "$dir/full"; then
    echo "FAIL $1 at frame $2: no save made"
    sed -n '1,5p' "$dir/full"
    fail=$((fail + 1))
    return
  fi
  sed -n '/^weft: saved after frame/,$p' "$dir/full" | tail -n +2 > "$dir/rest"
  if cmp -s "$dir/rest" "$dir/post" && [ "$rcf" = "$rcp" ]; then
    pass=$((pass + 1))
  else
    echo "FAIL $1 at frame $2 (exit $rcf, loaded $rcp): the loaded run differs"
    diff "$dir/rest" "$dir/post" | sed -n '1,8p'
    fail=$((fail + 1))
  fi
}

for f in "$here"/timers.lua "$here"/waitables.lua "$here"/groups.lua "$here"/state.lua \
  "$here"/finalizers.lua "$here"/jobs.lua; do
  for n in 0 1 2 3 5 8 13 21 34; do same "$f" "$n"; done
done
echo "the programs of tests/save, at 9 frames each: $pass the same"

i=1
while [ "$i" -le "$nrandom" ]; do
  "$weft" run "$here/gen.lua" "$i" > "$dir/p$i.lua" 2> /dev/null
  same "$dir/p$i.lua" $((i % 60 + 1))
  rm -f "$dir/p$i.lua"
  i=$((i + 1))
done
echo "random programs: $nrandom, each saved at one frame"

# a recording that starts from a save (the save in its header): a bug
# report is the save and the seconds after it; its replay prints what the
# recorded run printed and verifies every frame
"$weft" run "$here/waitables.lua" $opts --save-at 10 "$dir/w.sav" > /dev/null 2>&1
"$weft" run --load "$dir/w.sav" $opts --record "$dir/w.tape" > "$dir/rec" 2>&1
"$weft" run --replay "$dir/w.tape" --verify > "$dir/rep" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q '^weft: replayed [0-9]* frames, each as recorded$' "$dir/rep" &&
  grep -v '^weft: replayed' "$dir/rep" | cmp -s - "$dir/rec"; then
  pass=$((pass + 1))
else
  echo "FAIL a recording from a save does not replay as recorded (exit $rc)"
  diff "$dir/rec" "$dir/rep" | sed -n '1,8p'
  fail=$((fail + 1))
fi

# refused: a cut save, a changed byte, a file that is no save
"$weft" run "$here/timers.lua" --save-at 5 "$dir/good.sav" > /dev/null 2>&1
size=$(wc -c < "$dir/good.sav")
refused() { # what FILE
  if "$weft" run --load "$2" > "$dir/out" 2>&1; then
    echo "FAIL $1 was loaded"
    fail=$((fail + 1))
  elif grep -q "^weft: --load: .*: bad save: $3" "$dir/out"; then
    pass=$((pass + 1))
  else
    echo "FAIL $1: not the message expected ($3)"
    cat "$dir/out"
    fail=$((fail + 1))
  fi
}
head -c $((size / 2)) "$dir/good.sav" > "$dir/cut.sav"
refused "a save cut in half" "$dir/cut.sav" "it is cut short"
cp "$dir/good.sav" "$dir/flip.sav"
printf 'X' | dd of="$dir/flip.sav" bs=1 seek=$((size / 3)) conv=notrunc 2> /dev/null
refused "a save with a byte changed" "$dir/flip.sav" "its checksum does not match"
refused "a Lua file" "$here/timers.lua" "not made by weft run --save-at"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
