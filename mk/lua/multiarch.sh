#!/bin/sh
# Writes Debian's lua5.4-deb-multiarch.h for compiler CC: Debian's
# luaconf.h includes it for the directory of C modules (LUA_CPATH's
# default, which weft's sandbox never loads from). liblua5.4-dev ships it
# for the machine's own architecture only; weft builds Lua itself, for
# cross targets too, and installs this one beside Lua's headers.
# Usage: multiarch.sh CC... > lua5.4-deb-multiarch.h
arch=$("$@" -print-multiarch 2>/dev/null)
[ -n "$arch" ] || arch=$("$@" -dumpmachine 2>/dev/null)
[ -n "$arch" ] || arch=unknown
cat <<H
/* Written by weft's mk/lua/multiarch.sh, as Debian's lua5.4 package writes it. */
#ifndef _LUA_DEB_MULTIARCH_
#define _LUA_DEB_MULTIARCH_
#define DEB_HOST_MULTIARCH "$arch"
#endif
H
