#!/bin/sh
# The library's source keeps its rooms: no file in host/ or bindings/
# over 1,000 lines; every function a bindings/ header declares (not
# inline) is defined in the .c of the same name, and a header with no .c
# of its name declares none (host/'s public headers, sched.h above all,
# are each implemented by several files); the .c files reach one
# another's headers, directly or through other headers, in no circle
# (tsort finds none); bindings/base/internal.h, what every module shares,
# stays under 150 lines.
# Usage: tests/layout.sh
fail=0
say() { echo "$1"; fail=1; }
tmp=${TMPDIR:-/tmp}/layout.$$
trap 'rm -f "$tmp"' EXIT

for f in host/*.c host/*.h bindings/*.c bindings/*.h bindings/*/*.c bindings/*/*.h; do
  n=$(wc -l <"$f")
  [ "$n" -le 1000 ] || say "$f has $n lines (over 1,000)"
done

for h in bindings/*.h bindings/*/*.h; do
  c=${h%.h}.c
  if [ ! -f "$c" ]; then # shared types and inline functions only
    fns=$(grep -v '^static' "$h" | sed -n 's/^[a-z][a-z_0-9 *]*[ *]\([a-z_][a-z_0-9]*\)(.*/\1/p' | tr '\n' ' ')
    [ -z "$fns" ] || say "$h, the header of no .c, declares $fns"
    continue
  fi
  for fn in $(grep -v '^static' "$h" | sed -n 's/^[a-z][a-z_0-9 *]*[ *]\([a-z_][a-z_0-9]*\)(.*/\1/p' | sort -u); do
    grep -q "^[A-Za-z].*[ *]$fn(.*[^;]$" "$c" ||
      say "$h declares $fn, which $c does not define"
  done
done

# The headers a file reaches: its own includes, then theirs.
reach() {
  seen=""
  todo=$(sed -n 's/^#include "\([a-z_./]*\)\.h"/\1/p' "$1" | while read -r i; do
    echo "$(dirname "$1")/$i"
  done)
  while [ -n "$todo" ]; do
    next=""
    for m in $todo; do
      m=$(realpath -m --relative-to=. "$m")
      case " $seen " in *" $m "*) continue ;; esac
      seen="$seen $m"
      [ -f "$m.h" ] && next="$next $(sed -n 's/^#include "\([a-z_./]*\)\.h"/\1/p' "$m.h" | while read -r i; do
        echo "$(dirname "$m")/$i"
      done)"
    done
    todo=$next
  done
  echo "$seen"
}

for c in host/*.c bindings/*.c bindings/*/*.c cli/*.c; do
  me=${c%.c}
  for m in $(reach "$c"); do
    [ "$m" != "$me" ] && [ -f "$m.c" ] && echo "$me $m"
  done
done >"$tmp"
if ! tsort "$tmp" >/dev/null 2>"$tmp.err"; then
  say "the library's .c files reach one another's headers in a circle, among: $(grep -v 'input contains a loop' "$tmp.err" | sed 's/^tsort: //' | sort -u | tr '\n' ' ')"
fi
rm -f "$tmp.err"

n=$(wc -l <bindings/base/internal.h)
[ "$n" -lt 150 ] || say "bindings/base/internal.h has $n lines (150 or more)"

[ $fail -eq 0 ] && echo "the library's files: under 1,000 lines, one owner per function, no circles"
exit $fail
