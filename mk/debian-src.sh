#!/bin/sh
# Fetches Debian source packages into DIR, unpacked with Debian's patches:
# Lua 5.4 for every build (mk/lua.mk), cJSON and cmocka for the cross
# builds. apt reads a deb-src list of its own, made from the machine's own
# Debian entries (the same URIs, suites, components and keys), with its
# lists and cache under build/apt: the system's apt configuration is never
# changed, and no root is needed.
# Usage: debian-src.sh DIR PACKAGE...
set -e
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
if ! aptget source -qq "$@" > apt-source.log 2>&1; then
  # The lists may be missing or older than the archive: refresh once.
  if aptget update -qq > apt-update.log 2>&1 && aptget source -qq "$@" > apt-source.log 2>&1; then :; else
    cat apt-update.log apt-source.log 2>/dev/null
    exit 1
  fi
fi
