#!/bin/sh
# Upstream test suites of Lua libraries (tests/suites/suites.txt), run
# under lua5.4 and as `weft run`'s main script, each test file from its
# package's directory (weft with that directory as --scripts), and
# compared: each test's result and message (spec files) or the whole
# output (plain files), and the exit status. Tests listed in
# tests/suites/expected.txt are expected to differ, each for the reason
# given there; any other difference fails.
# The packages are fetched into build/suites/src (shared by every build
# directory, as build/src is), and copied for each run into the weft
# build's directory (BUILD/suites/lua, BUILD/suites/weft).
# Usage: run.sh path/to/weft   (from the top of the tree)
weft=${1:-build/weft}
weft=$(cd "$(dirname "$weft")" && pwd)/$(basename "$weft")
here=tests/suites
top=$(pwd)
src=$top/build/suites/src
dir=$(dirname "$weft")/suites
start=$(date +%s)
list() { grep -v '^#' "$here/suites.txt" | grep -v '^[[:space:]]*$'; }
field() { echo "$1" | cut -d'|' -f"$2" | sed 's/^ *//; s/ *$//'; }

# Fetch every package, and luassert and say for spec.lua.
sh mk/debian-src.sh --orig "$src" lua-luassert lua-say $(list | cut -d'|' -f1) || exit 1
for p in lua-luassert lua-say; do
  [ -d "$src/$p" ] || { echo "FAIL the spec runner needs $p"; exit 1; }
done

# busted brings Penlight, and luassert's own specs use its tablex:
# Penlight's modules from its binary package, when apt can fetch it
# (with the machine's own lists; its source tarball, with its tests,
# cannot always be had). Without it those specs fail alike in both.
if [ ! -d "$src/penlight/pl" ]; then
  rm -rf "$src/deb" && mkdir -p "$src/deb"
  if (cd "$src/deb" && apt-get download -qq -o APT::Sandbox::User="$(id -un)" lua-penlight) \
       > "$src/deb/apt.log" 2>&1 && dpkg-deb -x "$src"/deb/lua-penlight_*.deb "$src/deb/x"; then
    mkdir -p "$src/penlight" && cp -R "$src/deb/x/usr/share/lua/5.1/pl" "$src/penlight/pl"
  else
    echo "lua-penlight's binary package cannot be fetched: luassert's specs that use it fail in both"
  fi
fi

# A fresh copy of a package for one interpreter: its tests may write.
stage() { # package, install, destination
  rm -rf "$3" && mkdir -p "$(dirname "$3")" && cp -R "$src/$1" "$3" || exit 1
  mkdir -p "$3/_suite"
  cp "$here/spec.lua" "$3/_suite/"
  cp -R "$src/lua-luassert/src" "$3/_suite/luassert"
  cp -R "$src/lua-say/src/say" "$3/_suite/say"
  [ -d "$src/penlight/pl" ] && cp -R "$src/penlight/pl" "$3/_suite/pl"
  [ "$2" = - ] && return
  for link in $2; do ln -s "${link#*=}" "$3/${link%%=*}"; done
}

# Records of one output: a line that does not start with two spaces and
# the indented lines after it; addresses made neutral.
normal() { sed 's/0x[0-9a-fA-F]*/0x?/g' "$1"; }
# The output without the records of the expected tests and the summary.
strip() { # output, file of expected test names
  normal "$1" | awk -v skip="$2" '
    BEGIN { while ((getline n < skip) > 0) names[n] = 1 }
    /^  / { if (!drop) print; next }
    /^[0-9]+ passed, [0-9]+ failed/ { drop = 1; next }
    { drop = 0
      name = $0; sub(/^(ok|FAIL|pending) /, "", name); sub(/: .*/, "", name)
      if (name in names) drop = 1; else print }'
}
# The record of one test, for the stale check.
record() { normal "$1" | awk -v n="$2" '
  /^  / { if (on) print; next }
  { name = $0; sub(/^(ok|FAIL|pending) /, "", name); sub(/: .*/, "", name); on = (name == n); if (on) print }'; }

pass=0
fail=0
summary=""
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
list | while IFS= read -r line; do echo "$line"; done > "$tmp/list"
while IFS= read -r line; do
  pkg=$(field "$line" 1); how=$(field "$line" 2); install=$(field "$line" 3); globs=$(field "$line" 4)
  if [ ! -d "$src/$pkg" ]; then
    summary="$summary$pkg: not run, its upstream tarball cannot be fetched here\n"
    continue
  fi
  stage "$pkg" "$install" "$dir/lua/$pkg"
  stage "$pkg" "$install" "$dir/weft/$pkg"
  files=$(cd "$src/$pkg" && ls $globs 2>/dev/null)
  lua_ok=0; weft_ok=0; total=0; t0=$(date +%s)
  for f in $files; do
    if [ "$how" = spec ]; then cmd="_suite/spec.lua $f"; else cmd=$f; fi
    out=$tmp/$(echo "$pkg/$f" | tr / _)
    (cd "$dir/lua/$pkg" && LUA_PATH='./?.lua;./?/init.lua' LUA_CPATH= timeout 300 lua5.4 $cmd) \
      > "$out.lua" 2> "$out.lua.err" < /dev/null
    lua_rc=$?
    (cd "$dir/weft/$pkg" && timeout 300 "$weft" run $cmd --scripts .) \
      > "$out.weft" 2> "$out.weft.err" < /dev/null
    weft_rc=$?
    # The expected differences of this file: test names, or * for all.
    awk -F' *[|] *' -v p="$pkg" -v f="$f" '!/^#/ && $1 == p && $2 == f { print $3 }' \
      "$here/expected.txt" > "$out.expected"
    if [ "$how" = spec ]; then
      n=$(grep -c '^ok \|^FAIL ' "$out.lua")
      l=$(grep -c '^ok ' "$out.lua"); w=$(grep -c '^ok ' "$out.weft")
    else
      n=1; l=0; w=0
      [ $lua_rc -eq 0 ] && l=1
      [ $weft_rc -eq 0 ] && w=1
    fi
    total=$((total + n)); lua_ok=$((lua_ok + l)); weft_ok=$((weft_ok + w))
    if grep -qx '\*' "$out.expected"; then
      pass=$((pass + 1))
      continue
    fi
    strip "$out.lua" "$out.expected" > "$out.a"
    strip "$out.weft" "$out.expected" > "$out.b"
    if [ $lua_rc -eq $weft_rc ] && cmp -s "$out.a" "$out.b"; then
      pass=$((pass + 1))
    else
      fail=$((fail + 1))
      echo "FAIL $pkg $f: lua5.4 exit $lua_rc, weft exit $weft_rc"
      diff "$out.a" "$out.b" | head -30
      tail -5 "$out.weft.err"
    fi
    # An expected difference that is no longer seen is named.
    while IFS= read -r t; do
      [ -n "$t" ] || continue
      if [ "$(record "$out.lua" "$t")" = "$(record "$out.weft" "$t")" ]; then
        echo "note: $pkg $f: '$t' no longer differs (tests/suites/expected.txt)"
      fi
    done < "$out.expected"
  done
  summary="$summary$pkg: $total tests; lua5.4 passes $lua_ok, weft $weft_ok ($(($(date +%s) - t0)) s)\n"
done < "$tmp/list"
printf "$summary"
echo "test-suites took $(($(date +%s) - start)) s"
echo "test-suites: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
