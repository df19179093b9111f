#!/bin/sh
# Runs a command N times in a row with a process burning the processor on
# every core beside it: anything that depends on time must still pass
# (make check-load runs `make check` 5 times this way).
# Usage: tests/load.sh N COMMAND...
n=$1
shift
cores=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
pids=""
for _ in $(seq "$cores"); do
  sh -c 'while :; do :; done' &
  pids="$pids $!"
done
trap 'kill $pids 2>/dev/null' EXIT INT TERM
echo "== $cores processes burning the processor beside: $*"
passed=0
for i in $(seq "$n"); do
  start=$(date +%s)
  if "$@" > "/tmp/weft-load.$$.log" 2>&1; then
    passed=$((passed + 1))
    echo "run $i of $n: passed ($(($(date +%s) - start)) s)"
  else
    echo "run $i of $n: FAILED ($(($(date +%s) - start)) s); its failures:"
    grep -E 'FAIL|FAILED|Error|failed' "/tmp/weft-load.$$.log" | grep -v '^\[ *OK' | head -20
  fi
done
rm -f "/tmp/weft-load.$$.log"
echo "$passed of $n passed under load"
[ "$passed" -eq "$n" ]
