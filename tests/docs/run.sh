#!/bin/sh
# The documentation against the programs: docs/programs.md's usage blocks
# equal --help, `make help` names every target, every command README.md and
# the pages in docs/ show works as they say, in seconds: none runs another
# suite or waits out a timer, and every relative link in them leads to a
# file and heading that exist. Usage: tests/docs/run.sh build
build=${1:-build}
usage_doc=docs/programs.md # where the <!-- usage: PROGRAM --> blocks live
out=$build/docs-test
mkdir -p "$out"
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok    $1"; }
bad() { fail=$((fail + 1)); echo "FAIL  $1"; [ -n "$2" ] && sed 's/^/      /' "$2" | tail -n 25; }

progs=$build/weft
[ -x "$build/weft-demo" ] && progs="$progs $build/weft-demo"

# --help: the usage on stdout, exit 0, and the docs show exactly that
for p in $progs; do
  if "$p" --help >"$out/help.out" 2>"$out/help.err" && [ -s "$out/help.out" ] && [ ! -s "$out/help.err" ]; then
    ok "$(basename "$p") --help prints to stdout and exits 0"
  else
    bad "$(basename "$p") --help prints to stdout and exits 0" "$out/help.err"
  fi
done
if README=$usage_doc sh tests/cli/usage.sh check $progs >"$out/usage.log" 2>&1; then
  ok "$usage_doc's usage blocks equal --help"
else
  bad "$usage_doc's usage blocks equal --help" "$out/usage.log"
fi

# make help names every target the makefiles define
make -s help >"$out/help.txt" 2>&1
missing=""
for t in $(sed -n 's/^\.PHONY: *//p' Makefile demo/demo.mk tests/bench/bench.mk 2>/dev/null); do
  [ "$t" = all ] && continue
  grep -q "^make $t " "$out/help.txt" || missing="$missing $t"
done
if [ -z "$missing" ] && grep -q '^make  ' "$out/help.txt"; then
  ok "make help names every target"
else
  bad "make help names every target (missing:$missing)"
fi

# ---- every relative link leads somewhere ----
# A link is `](target)` outside code; a target with a scheme (https:) is
# not followed. The path, relative to the page, must exist; an #anchor
# must be a heading of that page, named as GitHub names it: lowercase,
# spaces to '-', punctuation other than '-' and '_' dropped, and a
# heading met again gets -1, -2, ...
anchors() { # file.md
  LC_ALL=C awk '
    /^```/ { fence = !fence; next }
    fence || !/^#+ / { next }
    {
      s = $0; sub(/^#+ +/, "", s); sub(/[ \t]+#+[ \t]*$/, "", s)
      s = tolower(s); gsub(/[^a-z0-9 _-]/, "", s); gsub(/ /, "-", s)
      if (s in seen) print s "-" seen[s]++; else { seen[s] = 1; print s }
    }' "$1"
}
links() { # file.md: its link targets
  LC_ALL=C awk '
    /^```/ { fence = !fence; next }
    fence { next }
    {
      s = $0; gsub(/`[^`]*`/, "", s)
      while (match(s, /\]\([^)]*\)/)) {
        t = substr(s, RSTART + 2, RLENGTH - 3); sub(/ .*/, "", t); print t
        s = substr(s, RSTART + RLENGTH)
      }
    }' "$1"
}
: >"$out/badlinks"
nlinks=0
for doc in README.md docs/*.md; do
  dir=$(dirname "$doc")
  links "$doc" >"$out/links"
  nlinks=$((nlinks + $(wc -l <"$out/links")))
  while IFS= read -r t; do
    case "$t" in [a-z]*:*) continue ;; esac
    path=${t%%#*}
    anchor=
    case "$t" in *'#'*) anchor=${t#*#} ;; esac
    file=$doc
    [ -n "$path" ] && file=$dir/$path
    if [ ! -e "$file" ]; then
      echo "$doc: ($t): no file $file" >>"$out/badlinks"
    elif [ -n "$anchor" ] && ! anchors "$file" | grep -qxF -- "$anchor"; then
      echo "$doc: ($t): no heading #$anchor in $file" >>"$out/badlinks"
    fi
  done <"$out/links"
done
if [ ! -s "$out/badlinks" ] && [ "$nlinks" -ge 20 ]; then
  ok "every relative link in README.md and docs/*.md leads to a file and heading ($nlinks links)"
else
  bad "every relative link in README.md and docs/*.md leads to a file and heading ($nlinks links)" "$out/badlinks"
fi

# ---- every command the documents show ----
# Commands are the lines of ```sh blocks, the indented lines that start
# with build/, make or xvfb-run, and inline `code` that starts with one of
# those or with weft run/test and has arguments. They run in a scratch
# directory that links the repository's scripts/, assets/, tests/ and the
# build as build/, so what they write (out.png, the tour's docs/*.png)
# stays there. No command here runs another suite or waits out a timer:
# - make lines are dry runs (make test would run the suites, make clean
#   would remove the build, make run opens a window until the player
#   quits), except make help;
# - weft test runs with --list: each file loads and names its cases, and
#   make test-lua runs the cases;
# - a game that runs until the player quits (the demo without --headless,
#   --frames or --help: --watch, --play) opens its window under Xvfb and
#   ends after 30 frames;
# - an xvfb-run line of the demo runs headless, on the virtual clock: the
#   same options and script, no window and no waiting for the wall clock
#   (the window itself is the line above's and test-demo's to check).
root=$(pwd)
absbuild=$(cd "$build" && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
ln -s "$root/scripts" "$scratch/scripts"
ln -s "$root/assets" "$scratch/assets"
ln -s "$root/tests" "$scratch/tests"
ln -s "$absbuild" "$scratch/build"
mkdir -p "$scratch/docs"
extract() { # file
  awk '
    /^```sh/ { sh = 1; next }
    /^```/ { sh = 0; next }
    sh { print; next }
    /^    (build\/|make( |$)|xvfb-run )/ { sub(/^    /, ""); print }
  ' "$1"
  grep -o '`\(make [^`]*\|build/weft[^`]* [^`]*\|xvfb-run [^`]*\|weft run [^`]*\|weft test [^`]*\)`' "$1" |
    tr -d '`'
}
: >"$out/commands"
for doc in README.md docs/*.md; do
  extract "$doc" | sed 's/  *#.*//; s/[[:space:]]*$//' | grep -v '^usage:\|^ *$\|[[]' |
    while IFS= read -r c; do printf '%s\t%s\n' "$doc" "$c"; done >>"$out/commands"
done
sort -u -k2 -t "$(printf '\t')" "$out/commands" >"$out/commands.u"
# display drivers keep allocations of their own until exit
noleaks="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
n=0
while IFS="$(printf '\t')" read -r doc cmd; do
  n=$((n + 1))
  log="$out/cmd$n.log"
  case "$cmd" in
    "make help") (cd "$root" && make -s help) >"$log" 2>&1; rc=$? ;;
    make*) (cd "$root" && make -n ${cmd#make }) >"$log" 2>&1; rc=$? ;;
    "weft test"*) (cd "$root" && "$absbuild/weft" ${cmd#weft } --list) >"$log" 2>&1; rc=$? ;;
    "weft "*) (cd "$root" && "$absbuild/weft" ${cmd#weft }) >"$log" 2>&1; rc=$? ;;
    *--watch*--frames*|*--frames*--watch*)
      (cd "$scratch" && timeout 300 sh -c "$cmd") >"$log" 2>&1; rc=$? ;;
    build/weft-demo*--headless*|build/weft-demo*--frames*|build/weft-demo*--help*)
      (cd "$scratch" && timeout 300 sh -c "$cmd") >"$log" 2>&1; rc=$? ;;
    *--watch*|build/weft-demo*)
      (cd "$scratch" && ASAN_OPTIONS=$noleaks timeout 300 xvfb-run -a sh -c "$cmd --frames 30") \
        >"$log" 2>&1; rc=$? ;;
    xvfb-run*)
      run=$(printf '%s\n' "$cmd" |
        sed 's|^xvfb-run\( -[a-z]\( "[^"]*"\)\{0,1\}\)* \(build/weft-demo\) |\3 --headless |')
      case "$run" in
        xvfb-run*) (cd "$scratch" && ASAN_OPTIONS=$noleaks timeout 300 sh -c "$run") ;;
        *) (cd "$scratch" && timeout 300 sh -c "$run") ;;
      esac >"$log" 2>&1
      rc=$? ;;
    *) (cd "$scratch" && timeout 300 sh -c "$cmd") >"$log" 2>&1; rc=$? ;;
  esac
  if [ $rc -eq 0 ]; then ok "$doc: $cmd"; else bad "$doc: $cmd (exit $rc)" "$log"; fi
done <"$out/commands.u"
[ "$n" -ge 8 ] || bad "found only $n commands in the docs"

# the abridged chase test in designers.md passes when copied
awk '/^-- tests\/demo\/chase_test.lua, abridged/ { on = 1 } on && /^```/ { exit } on' \
  docs/designers.md >"$scratch/abridged_test.lua"
if [ -s "$scratch/abridged_test.lua" ] &&
   (cd "$scratch" && timeout 120 build/weft-demo --headless --seed 7 --frames 9000 \
      --script abridged_test.lua) >"$out/abridged.log" 2>&1; then
  ok "docs/designers.md: the abridged chase test passes as written"
else
  bad "docs/designers.md: the abridged chase test passes as written" "$out/abridged.log"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
