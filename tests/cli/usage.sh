#!/bin/sh
# docs/programs.md shows each program's --help text between the lines
# `<!-- usage: PROGRAM -->` and `<!-- end usage -->`. The programs print it
# from their option tables, so this keeps the page equal to them.
# Usage: usage.sh check|write build/weft build/weft-demo
#   check: exit 1 (with a diff) if the page differs from --help
#   write: rewrite the page's blocks from --help (make usage)
mode=$1
shift
readme=${README:-docs/programs.md}
rc=0
for prog in "$@"; do
  name=$(basename "$prog")
  help=$("$prog" --help) || { echo "FAIL $name --help exits $?"; rc=1; continue; }
  tmp=$(mktemp)
  printf '%s\n' "$help" | sed 's/^/    /; s/^    $//' >"$tmp.block"
  if ! grep -q "^<!-- usage: $name -->\$" "$readme"; then
    echo "FAIL $readme has no <!-- usage: $name --> block"
    rc=1
    rm -f "$tmp" "$tmp.block"
    continue
  fi
  awk -v name="$name" -v block="$tmp.block" '
    $0 == "<!-- usage: " name " -->" { print; print ""; while ((getline l < block) > 0) print l; print ""; skip = 1; next }
    skip && $0 == "<!-- end usage -->" { skip = 0 }
    !skip { print }' "$readme" >"$tmp"
  if [ "$mode" = write ]; then
    cmp -s "$tmp" "$readme" || { cp "$tmp" "$readme"; echo "updated the $name usage in $readme"; }
  elif ! cmp -s "$tmp" "$readme"; then
    echo "FAIL $readme's $name usage differs from $name --help (run make usage):"
    diff "$readme" "$tmp" | sed 's/^/  /'
    rc=1
  fi
  rm -f "$tmp" "$tmp.block"
done
exit $rc
