#!/bin/sh
# Lua conformance: every case here runs under lua5.4 and inside a weft
# task, and the output must be identical (stdout and stderr together). A case runs in weft three ways:
# as the task's body, after a wait(0), and inside a coroutine the task
# made (compared with lua5.4 running it inside a coroutine too).
# Usage: run.sh path/to/weft
weft=${1:-build/weft}
here=$(dirname "$0")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# The cases run long stretches without waiting: a budget of 1e7
# instructions (preempted past it, killed past three) lets them finish,
# and still preempts the longest ones where they are.
opts="--budget 10000000"
pass=0
fail=0

# A driver that runs the case's source, loaded under its own name, after
# `before` and inside `how` ("call" or "coroutine").
driver() { # case-path, before, how, out
  src=$(cat "$1")
  case "$src" in *']====]'*) echo "FAIL $1 holds ]====]"; exit 1;; esac
  {
    printf '%s\n' "$2"
    printf 'local f = assert(load([====[%s]====], "@%s", "t", _ENV))\n' "$src" "$1"
    if [ "$3" = coroutine ]; then printf 'coroutine.wrap(f)()\n'; else printf 'f()\n'; fi
  } > "$4"
}

compare() { # name, expected-file, actual-file
  if cmp -s "$2" "$3"; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL $1"
    diff "$2" "$3" | head -20
  fi
}

for case in "$here"/*.lua; do
  name=$(basename "$case" .lua)
  [ "$name" = in_coroutine ] && continue
  lua5.4 "$case" > "$dir/$name.lua" 2>&1
  lua5.4 "$here/in_coroutine.lua" "$case" > "$dir/$name.co.lua" 2>&1
  "$weft" run "$case" $opts > "$dir/$name.weft" 2>&1
  compare "$name as a task's body" "$dir/$name.lua" "$dir/$name.weft"
  driver "$case" "wait(0)" call "$dir/$name.wait.drv"
  "$weft" run "$dir/$name.wait.drv" $opts > "$dir/$name.wait" 2>&1
  compare "$name after wait(0)" "$dir/$name.lua" "$dir/$name.wait"
  driver "$case" "" coroutine "$dir/$name.co.drv"
  "$weft" run "$dir/$name.co.drv" $opts > "$dir/$name.co" 2>&1
  compare "$name inside a coroutine" "$dir/$name.co.lua" "$dir/$name.co"
done
# Packages: a tree of modules each (packages/NAME/main.lua and what it
# requires), run from its directory as lua5.4 runs it (./?.lua,
# ./?/init.lua) and in weft with that directory as the scripts root: as
# the main script, after a wait(0), and inside a child task.
abs_weft=$(cd "$(dirname "$weft")" && pwd)/$(basename "$weft")
for pkg in "$here"/packages/*/; do
  name=packages/$(basename "$pkg")
  out=$dir/$(basename "$pkg")
  (cd "$pkg" && lua5.4 main.lua) > "$out.lua" 2>&1
  (cd "$pkg" && "$abs_weft" run main.lua --scripts . $opts) > "$out.weft" 2>&1
  compare "$name as the main script" "$out.lua" "$out.weft"
  printf 'arg[0] = "main.lua"\nwait(0)\ndofile("main.lua")\n' > "$out.wait.drv"
  (cd "$pkg" && "$abs_weft" run "$out.wait.drv" --scripts . $opts) > "$out.wait" 2>&1
  compare "$name after wait(0)" "$out.lua" "$out.wait"
  printf 'arg[0] = "main.lua"\nwait(spawn(dofile, "main.lua"))\n' > "$out.task.drv"
  (cd "$pkg" && "$abs_weft" run "$out.task.drv" --scripts . $opts) > "$out.task" 2>&1
  compare "$name inside a child task" "$out.lua" "$out.task"
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
