#!/bin/sh
# Fetches the Debian source packages the Windows build compiles (Lua 5.4,
# cJSON, cmocka) into DIR, unpacked with Debian's patches. Adds a deb-src
# entry for the machine's own Debian suite first if there is none.
# Usage: windows-src.sh DIR PACKAGE...
set -e
dir=$1
shift
root() { [ "$(id -u)" = 0 ]; }

if ! grep -qs '^[[:space:]]*\(deb-src\|Types:.*deb-src\)' /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
     /etc/apt/sources.list.d/*.sources; then
  # The same URIs, suites, components and keys as the binary entries.
  deb822=$(grep -ls '^URIs:.*debian' /etc/apt/sources.list.d/*.sources | head -1)
  if [ -n "$deb822" ]; then
    new=/etc/apt/sources.list.d/weft-src.sources
    text=$(sed 's/^Types:.*/Types: deb-src/' "$deb822")
  else
    new=/etc/apt/sources.list.d/weft-src.list
    text=$(sed -n 's/^[[:space:]]*deb[[:space:]]/deb-src /p' /etc/apt/sources.list)
  fi
  if ! root; then
    echo "no deb-src entry for apt; as root, write $new with these lines:"
    printf '%s\n' "$text" | sed 's/^/    /'
    echo "then run: sudo apt-get update"
    exit 1
  fi
  echo "adding $new (deb-src for the same suites)"
  printf '%s\n' "$text" > "$new"
  apt-get update -qq -o DPkg::Lock::Timeout=300
fi

mkdir -p "$dir"
cd "$dir"
if ! apt-get source -qq "$@" > apt-source.log 2>&1; then
  # The sources' lists may be older than the entry: refresh once.
  if root && apt-get update -qq && apt-get source -qq "$@" > apt-source.log 2>&1; then :; else
    cat apt-source.log
    exit 1
  fi
fi
