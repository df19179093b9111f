#!/bin/sh
# tests/layers.sh fails on what it is for: into a copy of DIR's objects
# goes one planted object at a time (a call up from base/ to core/, a
# file-scope pointer from accounts/ up to env/, the face calling into the
# debugger, an internal function named weft_, an object in a folder of
# no layer), and each must be named.
# Usage: tests/layers_test.sh DIR [OBJ...]  (as tests/layers.sh takes them)
dir=${1:?usage: tests/layers_test.sh DIR [OBJ...]}
shift
objs=${*:-$(cd "$dir" && ls host/*.o bindings/*.o bindings/*/*.o)}
here=$(dirname "$0")
tmp=${TMPDIR:-/tmp}/layers_test.$$
trap 'rm -rf "$tmp"' EXIT
fail=0

# A global function an object of DIR defines.
defined_in() { nm --defined-only -g "$dir/$1" | awk '$2 == "T" { print $3; exit }'; }

# plant NAME PATH SOURCE: PATH (under bindings/) gets SOURCE compiled;
# tests/layers.sh must fail and name PATH.
plant() {
  rm -rf "$tmp" && mkdir -p "$tmp"
  for o in $objs; do mkdir -p "$tmp/$(dirname "$o")" && cp "$dir/$o" "$tmp/$o"; done
  mkdir -p "$tmp/$(dirname "$2")"
  printf '%s\n' "$3" >"$tmp/planted.c"
  cc -c -w -o "$tmp/$2" "$tmp/planted.c" || { echo "FAIL $1: the plant does not compile"; fail=1; return; }
  out=$(sh "$here/layers.sh" "$tmp" $objs "$2" 2>&1)
  if [ $? -ne 0 ] && echo "$out" | grep -q "$2"; then
    echo "ok    $1 is caught: $(echo "$out" | grep "$2" | head -1)"
  else
    echo "FAIL  $1 passes the check: $out"
    fail=1
  fi
}

if sh "$here/layers.sh" "$dir" $objs >/dev/null; then
  echo "ok    the library as built passes"
else
  echo "FAIL  the library as built does not pass (make test-layout says where)"
  fail=1
fi
up=$(defined_in bindings/core/task.o)
plant "a call from base/ up to core/" bindings/base/planted.o \
  "void $up(void); void planted(void); void planted(void) { $up(); }"
up=$(defined_in bindings/env/sandbox.o)
plant "a file-scope pointer from accounts/ up to env/" bindings/accounts/planted.o \
  "void $up(void); void (*planted)(void) = $up;"
up=$(defined_in bindings/debugger/dap_wire.o)
plant "the face calling into the debugger" bindings/planted.o \
  "void $up(void); void planted(void); void planted(void) { $up(); }"
plant "an internal function with a public name" bindings/core/planted.o \
  "int weft_planted_helper(void); int weft_planted_helper(void) { return 1; }"
plant "an object in a folder of no layer" bindings/misc/planted.o \
  "int planted; int planted = 1;"
exit $fail
