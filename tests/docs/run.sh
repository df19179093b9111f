#!/bin/sh
# The documentation against the programs: README.md's usage blocks equal
# --help, `make help` names every target, and the commands README.md and
# docs/designers.md show run as they say. Usage: tests/docs/run.sh build
build=${1:-build}
out=$build/docs-test
mkdir -p "$out"
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok    $1"; }
bad() { fail=$((fail + 1)); echo "FAIL  $1"; [ -n "$2" ] && sed 's/^/      /' "$2" | tail -n 25; }

progs=$build/weft
[ -x "$build/weft-demo" ] && progs="$progs $build/weft-demo"

# --help: the usage on stdout, exit 0, and README shows exactly that
for p in $progs; do
  if "$p" --help >"$out/help.out" 2>"$out/help.err" && [ -s "$out/help.out" ] && [ ! -s "$out/help.err" ]; then
    ok "$(basename "$p") --help prints to stdout and exits 0"
  else
    bad "$(basename "$p") --help prints to stdout and exits 0" "$out/help.err"
  fi
done
if sh tests/cli/usage.sh check $progs >"$out/usage.log" 2>&1; then
  ok "README's usage blocks equal --help"
else
  bad "README's usage blocks equal --help" "$out/usage.log"
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

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
