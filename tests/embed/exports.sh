#!/bin/sh
# The shared library's boundary: it exports the functions the installed
# headers declare and nothing else (weft's, and the Lua API of the Lua it
# carries: lua.h, lauxlib.h and lualib.h as installed beside weft.h), and
# it reaches for no process-wide facility (no dlopen, no signal handler,
# no environment variable).
# Usage: tests/embed/exports.sh BUILD_DIR
set -u
B=$1
pass=0
fail=0
check() { # name, then a command that succeeds when the check holds
  name=$1
  shift
  if "$@" >/dev/null 2>&1; then
    pass=$((pass + 1))
    echo "ok    $name"
  else
    fail=$((fail + 1))
    echo "FAIL  $name"
  fi
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nm -D --defined-only "$B/libweft.so" | awk '$2 ~ /[TDBR]/ {print $3}' | sort -u >"$tmp/exported"
grep -ho 'weft_[a-z0-9_]*(' bindings/weft.h host/weft_base.h | tr -d '(' >"$tmp/weft"
# Lua's: each LUA_API / LUALIB_API / LUAMOD_API line names its function
# (in parentheses), and lua.h declares lua_ident.
{ grep -h '^LUA\(LIB\|MOD\)\?_API' "$B"/lua/include/*.h | grep -o '\(lua\|luaL\|luaopen\)_[a-zA-Z0-9_]*[][()]' |
    tr -d '()[]'; grep -ho 'lua_ident' "$B/lua/include/lua.h"; } >"$tmp/lua"
sort -u "$tmp/weft" "$tmp/lua" >"$tmp/declared"
check "libweft.so exports every function weft.h, weft_base.h and Lua's headers declare" \
  sh -c "comm -13 '$tmp/exported' '$tmp/declared' | grep -q . && exit 1 || exit 0"
check "libweft.so exports nothing else" \
  sh -c "comm -23 '$tmp/exported' '$tmp/declared' | grep -q . && exit 1 || exit 0"
nm -D --undefined-only "$B/libweft.so" | awk '{print $2}' | sed 's/@.*//' >"$tmp/imported"
for f in dlopen dlsym sigaction signal pthread_sigqueue pthread_kill; do
  check "libweft.so calls no $f" sh -c "! grep -qx '$f' '$tmp/imported'"
done
# Lua's os library links getenv (os.getenv, which no script is given);
# weft's own code reads no environment variable.
check "weft's own objects call no getenv" sh -c "! nm -u '$B'/host/*.o '$B'/bindings/*.o '$B'/bindings/*/*.o | grep -qw 'getenv'"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
