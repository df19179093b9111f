#!/bin/sh
# What a profile costs: W1 and W0 at 10,000 tasks, each run timed without
# and with BENCH_PROFILE (weft_profile_start over the timed frames),
# interleaved; prints each run's ratio and their median.
# Usage: profile_cost.sh path/to/weft-bench DIR RUNS FRAMES
bench=$1 dir=$2 runs=${3:-5} frames=${4:-600}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
secs() { sed -n 's/.*secs=\([0-9.]*\).*/\1/p'; }
for w in W1 W0; do
  ratios=""
  i=0
  while [ $i -lt "$runs" ]; do
    off=$("$bench" one weft "$dir" $w 10000 60 "$frames" | secs)
    on=$(BENCH_PROFILE="$out/p.json" "$bench" one weft "$dir" $w 10000 60 "$frames" | secs)
    ratios="$ratios $(awk -v a="$on" -v b="$off" 'BEGIN { printf "%.3f", a / b }')"
    i=$((i + 1))
  done
  median=$(echo $ratios | tr ' ' '\n' | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
  echo "$w 10,000 tasks, --profile / off: runs$ratios; median ${median}x (target: within 1.15x)"
done
