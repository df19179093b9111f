#!/bin/sh
# Writes OUT, Lua's lvm.c (IN) with weft's stop check (weft_luai.h): the
# VM re-reads its trap at every jump (updatetrap) and at every call
# (startfunc); both also ask luai_stopcheck. And the counted budget's
# count (a count hook alone) is taken in the VM's own loop, not in
# luaG_traceexec, until the instruction that fires it (luai_counting),
# and while nothing else needs the trap, before its other work
# (luai_counted).
# And ldo.c beside it (IN's directory to OUT's): a return calls rethook
# only for a hook that needs it, not for a count hook alone, whose
# rethook would only note 'oldpc' for a line hook that is not there (Lua
# itself says a stale 'oldpc' costs at most one extra line event once a
# line hook is set, as without any hook).
# And lobject.h and lfunc.c: a function prototype keeps the spawn site
# of the last spawn made from it (weft__lua_caller_site in weft_luai.c).
# And lgc.c: the collector marks the threads a host keeps only in its own
# memory (luai_markroots) wherever it marks the registry.
# Fails unless each edit took.
# Usage: edit.sh IN OUT   (IN, OUT: lvm.c paths)
set -e
in=$1
out=$2
sed -e 's|^#include "lvm.h"$|&\n#include "weft_luai.h"|' \
    -e 's|^#define updatetrap(ci)  (trap = ci->u.l.trap)$|#define updatetrap(ci)  (trap = ci->u.l.trap \| luai_stopcheck(L))|' \
    -e 's|^  trap = L->hookmask;$|  trap = L->hookmask \| luai_stopcheck(L);|' \
    -e 's|^  if (l_unlikely(trap)) {  /\* stack reallocation or hooks? \*/ \\$|  if (l_unlikely(trap) \&\& !luai_counted(L, trap)) {  /* stack reallocation or hooks? */ \\|' \
    -e 's|^    trap = luaG_traceexec(L, pc);  /\* handle hooks \*/ \\$|    trap = luai_counting(L) ? LUA_MASKCOUNT : luaG_traceexec(L, pc);  /* handle hooks */ \\|' \
    "$in" > "$out.tmp"
n=$(grep -c 'weft_luai.h\|luai_stopcheck(L)\|luai_counting(L)\|luai_counted(L, trap)' "$out.tmp")
if [ "$n" != 5 ]; then
  echo "$in: the Lua source is not the one weft's stop check was written for ($n of 5 edits took)" >&2
  rm -f "$out.tmp"
  exit 1
fi
mv "$out.tmp" "$out"

ldo_in=$(dirname "$in")/ldo.c
ldo_out=$(dirname "$out")/ldo.c
sed -e 's|^  if (l_unlikely(L->hookmask \&\& !hastocloseCfunc(wanted)))$|  if (l_unlikely((L->hookmask \& ~LUA_MASKCOUNT) \&\& !hastocloseCfunc(wanted)))|' \
    "$ldo_in" > "$ldo_out.tmp"
if ! grep -q 'hookmask & ~LUA_MASKCOUNT) && !hastocloseCfunc' "$ldo_out.tmp"; then
  echo "$ldo_in: the Lua source is not the one weft's return edit was written for" >&2
  rm -f "$ldo_out.tmp"
  exit 1
fi
mv "$ldo_out.tmp" "$ldo_out"

obj_in=$(dirname "$in")/lobject.h
obj_out=$(dirname "$out")/lobject.h
sed -e 's|^  TString  \*source;  /\* used for debug information \*/$|&\n  unsigned int weft_site[3];  /* weft'"'"'s: its last spawn'"'"'s pc + 1, parent site and site */|' \
    "$obj_in" > "$obj_out.tmp"
func_in=$(dirname "$in")/lfunc.c
func_out=$(dirname "$out")/lfunc.c
sed -e 's|^  f->source = NULL;$|&\n  f->weft_site[0] = f->weft_site[1] = f->weft_site[2] = 0;|' \
    "$func_in" > "$func_out.tmp"
if ! grep -q 'unsigned int weft_site\[3\];' "$obj_out.tmp" || ! grep -q 'f->weft_site\[0\] = ' "$func_out.tmp"; then
  echo "$in: the Lua source is not the one weft's spawn-site cache was written for" >&2
  rm -f "$obj_out.tmp" "$func_out.tmp"
  exit 1
fi
mv "$obj_out.tmp" "$obj_out"
mv "$func_out.tmp" "$func_out"

gc_in=$(dirname "$in")/lgc.c
gc_out=$(dirname "$out")/lgc.c
sed -e 's|^#include "lgc.h"$|&\n#include "weft_luai.h"|' \
    -e 's|^static void restartcollection (global_State \*g) {$|static void luai_markthread (void *g, struct lua_State *th) {\n  markobject((global_State *)g, th);\n}\n\n&|' \
    -e 's|^  markvalue(g, \&g->l_registry);$|&\n  luai_markroots(g);|' \
    "$gc_in" > "$gc_out.tmp"
if [ "$(grep -c 'weft_luai.h\|luai_markthread\|luai_markroots(g);' "$gc_out.tmp")" != 4 ]; then
  echo "$gc_in: the Lua source is not the one weft's collector roots were written for" >&2
  rm -f "$gc_out.tmp"
  exit 1
fi
mv "$gc_out.tmp" "$gc_out"
