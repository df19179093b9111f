#!/bin/sh
# Fetches Debian source packages into DIR, unpacked with Debian's patches:
# Lua 5.4 for every build (mk/lua.mk), cJSON and cmocka for the cross
# builds. apt reads a deb-src list of its own, made from the machine's own
# Debian entries (the same URIs, suites, components and keys), with its
# lists and cache under build/apt: the system's apt configuration is never
# changed, and no root is needed.
# Usage: debian-src.sh DIR PACKAGE...
#        debian-src.sh --orig DIR PACKAGE...
# --orig fetches each package's upstream tarball alone (apt checks it
# against the .dsc) and unpacks it into DIR/PACKAGE, without Debian's
# patches: for upstream test suites (tests/suites), where the archive
# answers for the upstream tarball but not always for Debian's part. A
# package whose tarball cannot be had is named on stderr and skipped.
set -e
orig=
if [ "$1" = --orig ]; then orig=1; shift; fi
dir=$1
shift
top=$(pwd)
apt="$top/build/apt"
mkdir -p "$apt/parts" "$apt/lists/partial" "$apt/cache/archives/partial"

if [ ! -s "$apt/parts/weft-src.sources" ] && [ ! -s "$apt/parts/weft-src.list" ]; then
  deb822=$(grep -ls '^URIs:.*debian' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1)
  if [ -n "$deb822" ]; then
    sed 's/^Types:.*/Types: deb-src/' "$deb822" > "$apt/parts/weft-src.sources"
  else
    sed -n 's/^[[:space:]]*deb[[:space:]]/deb-src /p' /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
      2>/dev/null > "$apt/parts/weft-src.list"
  fi
  if [ ! -s "$apt/parts/weft-src.sources" ] && [ ! -s "$apt/parts/weft-src.list" ]; then
    echo "no Debian entry in /etc/apt to make a deb-src entry from" >&2
    exit 1
  fi
fi
aptget() {
  apt-get -o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$apt/parts" \
    -o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt/cache" -o Debug::NoLocking=1 \
    -o APT::Sandbox::User="$(id -un)" "$@"
}
mkdir -p "$dir"
cd "$dir"
if [ -n "$orig" ]; then
  # One package at a time: apt stops a package at its first missing file.
  # The lists are refreshed once at most, when they do not name a package
  # (not when the archive lacks a file they name).
  updated=
  for p in "$@"; do
    [ -d "$p" ] && continue
    if ! ls "$p"_*.orig.tar.* >/dev/null 2>&1; then
      aptget source -qq --download-only "$p" > "apt-$p.log" 2>&1 || true
      if ! ls "$p"_*.orig.tar.* >/dev/null 2>&1 && [ -z "$updated" ] &&
        ! grep -q 'Failed to fetch' "apt-$p.log"; then
        updated=1
        aptget update -qq > apt-update.log 2>&1 || true
        aptget source -qq --download-only "$p" > "apt-$p.log" 2>&1 || true
      fi
    fi
    tarball=$(ls "$p"_*.orig.tar.* 2>/dev/null | head -1)
    if [ -z "$tarball" ]; then
      echo "$p: its upstream tarball cannot be fetched ($(grep -m1 'Failed to fetch' "apt-$p.log" | sed 's/ *\[IP.*//'))" >&2
      continue
    fi
    rm -rf "$p.tmp" && mkdir "$p.tmp" && tar -xf "$tarball" -C "$p.tmp" --strip-components=1 && mv "$p.tmp" "$p"
  done
  exit 0
fi
if ! aptget source -qq "$@" > apt-source.log 2>&1; then
  # The lists may be missing or older than the archive: refresh once.
  if aptget update -qq > apt-update.log 2>&1 && aptget source -qq "$@" > apt-source.log 2>&1; then :; else
    cat apt-update.log apt-source.log 2>/dev/null
    exit 1
  fi
fi
