#!/bin/sh
# The demo's source keeps one owner per function and no circles: every
# function a demo header declares is defined in the .c of the same name;
# the modules' includes of one another form no loop (tsort finds none);
# weft comes in as <weft.h>, no header is reached through "../"; main.c
# keeps one file-scope variable (the game).
# Usage: tests/demo/layout.sh [demo-dir]
dir=${1:-demo}
fail=0
say() { echo "$1"; fail=1; }

for h in "$dir"/*.h; do
  c=${h%.h}.c
  [ -f "$c" ] || continue
  # prototypes: a line starting a declaration that ends in ");"
  for fn in $(sed -n 's/^[a-z][a-z_0-9 *]*[ *]\([a-z_][a-z_0-9]*\)(.*/\1/p' "$h" | sort -u); do
    grep -q "^[a-z].*[ *]$fn(.*[^;]$" "$c" ||
      say "$(basename "$h") declares $fn, which $(basename "$c") does not define"
  done
done

edges=$(for c in "$dir"/*.c; do
  m=$(basename "$c" .c)
  sed -n 's/^#include "\([a-z_]*\)\.h"/\1/p' "$c" | while read -r inc; do
    [ "$inc" != "$m" ] && [ -f "$dir/$inc.c" ] && echo "$m $inc"
  done
done)
if ! printf '%s\n' "$edges" | tsort >/dev/null 2>"${TMPDIR:-/tmp}/layout.$$"; then
  say "the demo's modules include one another in a circle: $(tr '\n' ' ' <"${TMPDIR:-/tmp}/layout.$$")"
fi
rm -f "${TMPDIR:-/tmp}/layout.$$"

grep -n '#include "\.\./' "$dir"/*.c "$dir"/*.h && say "includes through ../"
grep -q '#include <weft.h>' "$dir/game.h" || say "game.h does not include <weft.h>"
n=$(grep -c '^static [a-z_][a-z_0-9 ]* [a-zA-Z_][a-zA-Z_0-9]*\( = .*\)\{0,1\};' "$dir/main.c")
[ "$n" -le 1 ] || say "main.c has $n file-scope variables"

[ $fail -eq 0 ] && echo "the demo's modules: one owner per function, no circles"
exit $fail
