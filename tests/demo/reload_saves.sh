#!/bin/sh
# The saves tests/demo/reload.lua asks for while the game runs: when the
# game's log shows "STEP break", patrol.lua is saved with a syntax error;
# at "STEP fix", with a good change. Each is an atomic save (rename), as
# vim makes. Usage: reload_saves.sh LOG ROOT (ROOT holds the scripts/ copy)
log=$1
root=$2
for step in break fix; do
  n=0
  until grep -q "STEP $step" "$log" || [ $n -ge 600 ]; do sleep 0.1; n=$((n + 1)); done
  sleep 0.3
  if [ $step = break ]; then
    printf 'local M = {\n  broken = \n' >"$root/scripts/ai/patrol.lua.new"
  else
    sed 's/^M.SPEED = 40 /M.SPEED = 41 /' scripts/ai/patrol.lua >"$root/scripts/ai/patrol.lua.new"
  fi
  mv "$root/scripts/ai/patrol.lua.new" "$root/scripts/ai/patrol.lua"
done
