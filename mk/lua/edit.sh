#!/bin/sh
# Writes OUT, Lua's lvm.c (IN) with weft's stop check (weft_luai.h): the
# VM re-reads its trap at every jump (updatetrap) and at every call
# (startfunc); both also ask luai_stopcheck. And the counted budget's
# count (a count hook alone) is taken in the VM's own loop, not in
# luaG_traceexec, until the instruction that fires it (luai_counting).
# One function is added at its end: weft__lua_wanted, which reads a
# call's wanted results where Lua's API does not reach.
# Fails unless each edit took.
# Usage: edit.sh IN OUT
set -e
in=$1
out=$2
sed -e 's|^#include "lvm.h"$|&\n#include "weft_luai.h"|' \
    -e 's|^#define updatetrap(ci)  (trap = ci->u.l.trap)$|#define updatetrap(ci)  (trap = ci->u.l.trap \| luai_stopcheck(L))|' \
    -e 's|^  trap = L->hookmask;$|  trap = L->hookmask \| luai_stopcheck(L);|' \
    -e 's|^    trap = luaG_traceexec(L, pc);  /\* handle hooks \*/ \\$|    trap = luai_counting(L) \|\| luaG_traceexec(L, pc);  /* handle hooks */ \\|' \
    "$in" > "$out.tmp"
cat >> "$out.tmp" <<'EOF'

/* weft's: how many results the caller of L's innermost call
   wants. */
int weft__lua_wanted (lua_State *L) {
  return L->ci->nresults;
}
EOF
n=$(grep -c 'weft_luai.h\|luai_stopcheck(L)\|luai_counting(L)\|^int weft__lua_wanted' "$out.tmp")
if [ "$n" != 5 ]; then
  echo "$in: the Lua source is not the one weft's stop check was written for ($n of 5 edits took)" >&2
  rm -f "$out.tmp"
  exit 1
fi
mv "$out.tmp" "$out"
