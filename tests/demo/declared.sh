#!/bin/sh
# Every function the demo registers for scripts (the luaL_Reg tables of
# demo/*.c, load_image, load_level) is declared in demo/moonwatch.d.lua,
# the entity's methods as Entity methods.
# Usage: tests/demo/declared.sh [demo-dir]
dir=${1:-demo}
d=$dir/moonwatch.d.lua
fail=0
methods=$(sed -n '/ent_methods\[\] = {/,/};/p' "$dir/verbs.c" | grep -o '{"[a-z_]*"' | tr -d '{"')
for m in $methods; do
  grep -q "^function Entity:$m(" "$d" || { echo "Entity:$m is not declared in $d"; fail=1; }
done
all=$(grep -ho '{"[a-z_]*", l_[a-z_]*}' "$dir"/*.c | sed 's/{"\([a-z_]*\)".*/\1/' | sort -u)
for f in $all load_image load_level; do
  echo "$methods" | grep -qx "$f" && ! grep -q "{\"$f\", l_" "$dir/control.c" &&
    ! sed -n '/globals\[\] = {/,/};/p' "$dir/verbs.c" | grep -q "{\"$f\"" && continue
  grep -q "^function $f(" "$d" || { echo "$f is not declared in $d"; fail=1; }
done
[ $fail -eq 0 ] && echo "every function the demo registers is declared in $d"
exit $fail
