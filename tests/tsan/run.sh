#!/bin/sh
# make tsan's runner: tests/tsan/tsan (two states on two threads), then
# the jobs' and the watchdog's unit tests, each under ThreadSanitizer,
# which stops a program at its first report with exit code 66: any race
# (or crash: a deadly signal is a report too) fails the target.
# Usage: tests/tsan/run.sh BUILD
#
# What the unit tests assert must hold too, except in two watchdog
# cases whose bounds are native speed's: TSan runs Lua's VM about ten
# times slower, and one gives work 2 s of script time (2,000 frames of
# 1 ms slices), the other expects a listener to finish inside the
# firing's 5 ms.
# Those may fail here on their timing alone; make test-c and make asan
# check them at full speed. Races in them fail all the same.
build=${1:-build-tsan}
# Ours first: options in the caller's TSAN_OPTIONS come later and win.
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 ${TSAN_OPTIONS:-}"
slow="a_long_loop_is_preempted_and_finishes_frames_later
listeners_past_the_firing_stretchs_time_run_in_later_frames"
out=$build/tsan-logs
mkdir -p "$out"

for t in tsan/tsan test_jobs test_watchdog; do
  prog=$build/tests/$t
  log=$out/$(basename "$t").log
  echo "== $prog (ThreadSanitizer)"
  "$prog" >"$log" 2>&1
  rc=$?
  cat "$log"
  if [ $rc = 66 ] || grep -q 'WARNING: ThreadSanitizer\|ERROR: ThreadSanitizer' "$log"; then
    echo "FAIL  $prog: ThreadSanitizer reported (above)"
    exit 1
  fi
  [ $rc = 0 ] && continue
  # cmocka exits with the number of failed cases: only the slow ones may
  failed=$(sed -n 's/^\[  FAILED  \] \([A-Za-z0-9_]*\)$/\1/p' "$log" | sort -u)
  if [ "$t" != test_watchdog ] || [ $rc -ge 128 ] || [ -z "$failed" ]; then
    echo "FAIL  $prog (exit $rc)"
    exit 1
  fi
  for f in $failed; do
    if ! printf '%s\n' "$slow" | grep -qx "$f"; then
      echo "FAIL  $prog: $f"
      exit 1
    fi
  done
  echo "ok    $prog: no race; failed on TSan's slowness alone (make test-c checks them):" $failed
done
echo "ThreadSanitizer: no report"
