#!/bin/sh
# A cross build's tests on this machine: every C test and `weft test
# tests/lua scripts`, each program through RUNNER (nothing for i386 and
# musl, which this x86-64 kernel runs itself; qemu-aarch64 for ARM64).
# Counts cases (cmocka's and weft test's), prints how long it took and
# ends with "N passed, N failed". Run from the top of the tree.
# Usage: run.sh NAME DIR "RUNNER" TEST...
name=$1
dir=$2
runner=$3
shift 3
start=$(date +%s)
pass=0
fail=0
ok() { pass=$((pass + ${2:-1})); echo "ok    $1"; }
bad() { # name log count
  fail=$((fail + $3)); echo "FAIL  $1"
  sed 's/^/      /' "$2" | grep -v '^      \[ \(RUN\|      OK\) ' | tail -40
}
out="$dir/out"
rm -rf "$out" && mkdir -p "$out"

file "$dir/weft" | sed 's/^[^:]*: /weft: /; s/, BuildID.*//'
for t in "$@"; do
  n=$(basename "$t")
  # shellcheck disable=SC2086 # the runner is a command and its arguments
  timeout 900 $runner "$t" >"$out/$n.log" 2>&1
  rc=$?
  passed=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$out/$n.log" | awk '{s += $1} END {print s + 0}')
  failed=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$out/$n.log" | awk '{s += $1} END {print s + 0}')
  if [ $rc -eq 0 ] && [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]; then
    ok "$n ($passed cases)" "$passed"
  else
    [ "$failed" -eq 0 ] && failed=1 # it crashed or hung before cmocka's summary
    pass=$((pass + passed))
    bad "$n (exit $rc, $passed passed, $failed failed)" "$out/$n.log" "$failed"
  fi
done

# shellcheck disable=SC2086
timeout 1800 $runner "$dir/weft" test tests/lua scripts >"$out/lua.log" 2>&1
rc=$?
line=$(grep '^[0-9]* passed, [0-9]* failed$' "$out/lua.log" | tail -1)
p=$(echo "$line" | sed -n 's/^\([0-9]*\) passed.*/\1/p')
f=$(echo "$line" | sed -n 's/.* \([0-9]*\) failed$/\1/p')
if [ $rc -eq 0 ] && [ -n "$p" ] && [ "$f" = 0 ]; then
  ok "weft test tests/lua scripts ($p cases)" "$p"
else
  pass=$((pass + ${p:-0}))
  [ -z "$f" ] || [ "$f" = 0 ] && f=1
  bad "weft test tests/lua scripts (exit $rc, ${p:-0} passed, $f failed)" "$out/lua.log" "$f"
fi

echo "$name: the tests took $(($(date +%s) - start)) s"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
