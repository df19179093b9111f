#!/bin/sh
# An engine embeds weft from the installed package: install into a
# scratch prefix, compile the public header alone and examples/embed with
# nothing but `pkg-config --cflags --libs weft`, run it; DESTDIR installs
# and uninstall. Usage: run.sh BUILD-DIR
build=${1:-build}
top=$(pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
pass=0
fail=0
check() { # name, condition (shell expression)
  if eval "$2"; then pass=$((pass + 1)); echo "ok    $1"; else fail=$((fail + 1)); echo "FAIL $1"; fi
}

prefix="$dir/prefix"
make -s --no-print-directory BUILD="$build" install PREFIX="$prefix" > "$dir/install.log" 2>&1
check "make install PREFIX=... installs the library, headers and weft.pc" \
  "[ -f '$prefix/lib/libweft.a' ] && [ -f '$prefix/lib/libweft.so' ] && [ -f '$prefix/include/weft.h' ] && [ -f '$prefix/lib/pkgconfig/weft.pc' ]"

export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
cflags=$(pkg-config --cflags weft)
libs=$(pkg-config --libs weft)
check "pkg-config knows weft and its version" "[ \"\$(pkg-config --modversion weft)\" = \"\$(sed -n 's/^#define WEFT_VERSION_STRING \"\\(.*\\)\"/\\1/p' bindings/weft.h)\" ]"

printf '#include <weft.h>\nint main(void) { return weft_version()[0] == 0; }\n' > "$dir/alone.c"
check "weft.h compiles alone with only pkg-config --cflags weft" \
  "cc -std=c11 -Wall -Wextra -Werror -c '$dir/alone.c' -o '$dir/alone.o' $cflags"

check "examples/embed builds out of tree against the installed copy" \
  "cc -std=c11 -Wall -Wextra -Werror -o '$dir/embed' examples/embed/host.c $cflags $libs"
(cd examples/embed && LD_LIBRARY_PATH="$prefix/lib" "$dir/embed" > "$dir/out" 2>&1)
check "the embedded host runs its script: the C verb's future, completed later, resumes it" \
  "[ \$? -eq 0 ] && grep -q '^the door is open at frame 2$' '$dir/out' && grep -q '^weft .*: script done$' '$dir/out'"
check "it runs on the installed shared library" \
  "LD_LIBRARY_PATH='$prefix/lib' ldd '$dir/embed' | grep -q '$prefix/lib/libweft.so'"

make -s --no-print-directory BUILD="$build" install DESTDIR="$dir/dest" PREFIX=/usr > "$dir/dest.log" 2>&1
check "DESTDIR is honoured" "[ -f '$dir/dest/usr/include/weft.h' ] && grep -q '^prefix=/usr$' '$dir/dest/usr/lib/pkgconfig/weft.pc'"
make -s --no-print-directory BUILD="$build" uninstall DESTDIR="$dir/dest" PREFIX=/usr > /dev/null 2>&1
check "make uninstall removes what install put there" \
  "[ -z \"\$(find '$dir/dest' -type f -o -type l)\" ]"

cd "$top"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
