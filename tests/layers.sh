#!/bin/sh
# The library's layers, read off the link graph: every symbol an object
# of DIR/host and DIR/bindings leaves undefined (nm -u: a call, or a
# file-scope pointer to a function or object) is matched to the object
# that defines it, and a reference may go to the caller's own layer or a
# lower one, never up; and a name with weft_ (one underscore) is one the
# public headers declare. Lowest first:
#   0 host/                  the scheduler, timers, pools, platform
#   1 bindings/base/         memory, log, spawn sites, loads, watchdog
#   2 bindings/accounts/     handles, budgets, costs, reports, recordings
#   3 bindings/core/         the wait protocol, channels, tasks
#   4 bindings/waitables/    futures, signals, combinators, jobs, finalizers
#   5 bindings/env/          the sandbox, io, coroutines, modules, groups
#   6 bindings/*.o           the face: the API table, the state, the C API
#   7 bindings/debugger/     an add-on over the face: nothing calls into it
# Usage: tests/layers.sh DIR [OBJ...]  (a build directory, e.g. build;
# the objects under it to read, by default every host/ and bindings/ one:
# the Makefile names those it builds, so a stale object does not count)
dir=${1:?usage: tests/layers.sh DIR [OBJ...]}
shift
tmp=${TMPDIR:-/tmp}/layers.$$
trap 'rm -f "$tmp".*' EXIT

layer() {
  case $1 in
  host/*) echo 0 ;;
  bindings/base/*) echo 1 ;;
  bindings/accounts/*) echo 2 ;;
  bindings/core/*) echo 3 ;;
  bindings/waitables/*) echo 4 ;;
  bindings/env/*) echo 5 ;;
  bindings/debugger/*) echo 7 ;;
  bindings/*/*) echo 99 ;; # a folder the layout does not know
  bindings/*) echo 6 ;;
  esac
}

objs=${*:-$(cd "$dir" && ls host/*.o bindings/*.o bindings/*/*.o 2>/dev/null)}
[ -n "$objs" ] || { echo "no objects under $dir/host and $dir/bindings"; exit 1; }
for o in $objs; do
  nm --defined-only -g "$dir/$o" | awk -v o="$o" 'NF == 3 { print $3, o }'
done | sort >"$tmp.defs"
for o in $objs; do
  nm -u "$dir/$o" | awk -v o="$o" '{ print $2, o }'
done | sort >"$tmp.uses"

fail=0
for o in $objs; do
  [ "$(layer "$o")" != 99 ] || { echo "$o: in a folder the layers do not name"; fail=1; }
done
# symbol user definer, one line a reference between two objects
join "$tmp.uses" "$tmp.defs" | awk '$2 != $3' >"$tmp.refs"
while read -r sym from to; do
  a=$(layer "$from")
  b=$(layer "$to")
  if [ "$b" -gt "$a" ] && [ "$b" != 99 ]; then
    echo "$from reaches up to $to ($sym)"
    fail=1
  fi
done <"$tmp.refs"
# Names: weft_ is the public API's (weft.h, weft_base.h); what the
# library defines for itself is weft__ (or its module's own prefix).
grep -ho 'weft_[a-z0-9_]*(' bindings/weft.h host/weft_base.h | tr -d '(' | sort -u >"$tmp.pub"
awk '$1 ~ /^weft_[a-z0-9]/ { print $1, $2 }' "$tmp.defs" | sort | join -v1 - "$tmp.pub" >"$tmp.bad"
while read -r sym o; do
  echo "$o defines $sym: weft_ names the public API only (an internal one is weft__)"
  fail=1
done <"$tmp.bad"
n=$(wc -l <"$tmp.refs")
[ $fail -eq 0 ] && echo "the link graph: $n references between objects, each to its own layer or below"
exit $fail
