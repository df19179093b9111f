#!/bin/sh
# An engine embeds weft from the installed package: install into a
# scratch prefix, compile the public header alone (in C and in C++17),
# examples/embed and examples/embed-cpp with nothing but `pkg-config
# --cflags --libs weft`, and again with CMake's find_package(weft), run
# them; DESTDIR installs and uninstall.
# Usage: run.sh BUILD-DIR
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
check "make install PREFIX=... installs the library, headers, weft.pc and weftConfig.cmake" \
  "[ -f '$prefix/lib/libweft.a' ] && [ -f '$prefix/lib/libweft.so' ] && [ -f '$prefix/include/weft.h' ] && [ -f '$prefix/lib/pkgconfig/weft.pc' ] && [ -f '$prefix/lib/cmake/weft/weftConfig.cmake' ] && [ -f '$prefix/lib/cmake/weft/weftConfigVersion.cmake' ]"

export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
cflags=$(pkg-config --cflags weft)
libs=$(pkg-config --libs weft)
check "pkg-config knows weft and its version" "[ \"\$(pkg-config --modversion weft)\" = \"\$(sed -n 's/^#define WEFT_VERSION_STRING \"\\(.*\\)\"/\\1/p' bindings/weft.h)\" ]"

printf '#include <weft.h>\nint main(void) { return weft_version() != WEFT_VERSION || weft_abi_version() != WEFT_ABI_VERSION; }\n' > "$dir/alone.c"
check "weft.h compiles alone with only pkg-config --cflags weft" \
  "cc -std=c11 -Wall -Wextra -Werror -c '$dir/alone.c' -o '$dir/alone.o' $cflags"

check "examples/embed builds out of tree against the installed copy" \
  "cc -std=c11 -Wall -Wextra -Werror -o '$dir/embed' examples/embed/host.c $cflags $libs"
(cd examples/embed && LD_LIBRARY_PATH="$prefix/lib" "$dir/embed" > "$dir/out" 2>&1)
check "the embedded host runs its script: the C verb's future, completed later, resumes it" \
  "[ \$? -eq 0 ] && grep -q '^the door is open at frame 2$' '$dir/out' && grep -q '^weft .*: script done$' '$dir/out'"
check "it runs on the installed shared library" \
  "LD_LIBRARY_PATH='$prefix/lib' ldd '$dir/embed' | grep -q '$prefix/lib/libweft.so'"

check "pkg-config --cflags weft names weft's directories only (cJSON's stays private)" \
  "! echo '$cflags' | grep -q cjson"
abi=$(sed -n 's/^#define WEFT_ABI_VERSION //p' bindings/weft.h)
check "libweft.so's SONAME follows WEFT_ABI_VERSION (libweft.so.$abi)" \
  "objdump -p '$prefix/lib/libweft.so' | grep -q 'SONAME *libweft.so.$abi\$'"
# A program built against another layout of weft_desc (here one 8 bytes
# shorter, as an older weft.h had) is refused with a clear error.
cat > "$dir/oldabi.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <weft.h>
int main(void) {
  weft_desc d;
  memset(&d, 0, sizeof d);
  d.size = sizeof d - 8;
  if (weft_open(&d)) return 1;
  weft_desc_init(&d);
  weft_state *W = weft_open(&d);
  return !W || weft_close(W) != 0;
}
C
check "a desc of another size is refused with a message naming WEFT_DESC_INIT; weft_desc_init's opens" \
  "cc -std=c11 -o '$dir/oldabi' '$dir/oldabi.c' $cflags $libs && LD_LIBRARY_PATH='$prefix/lib' '$dir/oldabi' 2> '$dir/oldabi.err' && grep -q 'desc.size is .*WEFT_DESC_INIT' '$dir/oldabi.err'"

# C++17: weft.h gives C linkage to weft and to the Lua it includes.
printf '#include <weft.h>\nint main() { weft_desc d = WEFT_DESC_INIT; return d.size != sizeof d || weft_version() != WEFT_VERSION || !lua_version(nullptr); }\n' > "$dir/alone.cpp"
check "weft.h compiles and links alone in C++17 with only pkg-config" \
  "c++ -std=c++17 -Wall -Wextra -Werror -pedantic -o '$dir/alone-cpp' '$dir/alone.cpp' $cflags $libs && LD_LIBRARY_PATH='$prefix/lib' '$dir/alone-cpp'"
check "examples/embed-cpp builds as C++17 against the installed copy" \
  "c++ -std=c++17 -Wall -Wextra -Werror -pedantic -o '$dir/embed-cpp' examples/embed-cpp/host.cpp $cflags $libs"
(cd examples/embed-cpp && LD_LIBRARY_PATH="$prefix/lib" "$dir/embed-cpp" > "$dir/out" 2>&1)
check "the C++ engine runs its script: a future, a signal, its own allocator with nothing live after close" \
  "[ \$? -eq 0 ] && grep -q '^script: the door is open at frame 2$' '$dir/out' && grep -q '^script: the bell rang at engine frame 3$' '$dir/out' && grep -q 'from C++: script done, 3 lines, 0 bytes live after close$' '$dir/out' || { cat '$dir/out'; false; }"

# An engine's own allocator, loader and logger against the installed
# static library, with the C library's allocator wrapped at link time:
# tests/test_embedder.c fails on any block weft takes from it.
static_libs=$(pkg-config --libs --static weft | sed 's/-lweft\b//')
wrap="-Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free,--wrap=strdup,--wrap=strndup,--wrap=fopen"
check "an engine's allocator and loader, from the installed libweft.a, see every byte and every script" \
  "cc -std=c11 -o '$dir/embedder' tests/test_embedder.c $cflags '$prefix/lib/libweft.a' $static_libs \
     \$(pkg-config --libs cmocka) $wrap > '$dir/embedder.log' 2>&1 && '$dir/embedder' >> '$dir/embedder.log' 2>&1 \
   || { cat '$dir/embedder.log'; false; }"

# CMake: find_package(weft) from the prefix, weft::weft and weft::weft_static.
for kind in shared static; do
  b="$dir/cmake-$kind"
  opt=OFF
  [ $kind = static ] && opt=ON
  { cmake -S examples/embed -B "$b" -DCMAKE_PREFIX_PATH="$prefix" -DEMBED_STATIC=$opt \
      -DCMAKE_C_FLAGS="-Wall -Wextra -Werror" && cmake --build "$b"; } > "$dir/cmake-$kind.log" 2>&1
  check "examples/embed builds with CMake: find_package(weft), weft::weft$([ $kind = static ] && echo _static)" \
    "[ \$? -eq 0 ] && [ -x '$b/embed' ]"
  (cd examples/embed && LD_LIBRARY_PATH="$prefix/lib" "$b/embed" > "$dir/out" 2>&1)
  check "the CMake build runs its script ($kind)" \
    "[ \$? -eq 0 ] && grep -q '^the door is open at frame 2$' '$dir/out' && grep -q '^weft .*: script done$' '$dir/out'"
done
for kind in shared static; do
  b="$dir/cmake-cpp-$kind"
  opt=OFF
  [ $kind = static ] && opt=ON
  { cmake -S examples/embed-cpp -B "$b" -DCMAKE_PREFIX_PATH="$prefix" -DEMBED_STATIC=$opt \
      -DCMAKE_CXX_FLAGS="-Wall -Wextra -Werror -pedantic" && cmake --build "$b"; } > "$dir/cmake-cpp-$kind.log" 2>&1
  check "examples/embed-cpp builds with CMake as C++17 ($kind)" "[ \$? -eq 0 ] && [ -x '$b/embed_cpp' ] || { cat '$dir/cmake-cpp-$kind.log'; false; }"
  (cd examples/embed-cpp && LD_LIBRARY_PATH="$prefix/lib" "$b/embed_cpp" > "$dir/out" 2>&1)
  check "the CMake C++ build runs its script ($kind)" \
    "[ \$? -eq 0 ] && grep -q 'from C++: script done, 3 lines, 0 bytes live after close$' '$dir/out'"
done
check "weft::weft is the installed shared library" "ldd '$dir/cmake-shared/embed' | grep -q '$prefix/lib/libweft.so'"
check "weft::weft_static needs no libweft.so" "! ldd '$dir/cmake-static/embed' | grep -q libweft"
check "pkg-config weft-static links the archive: the program needs no libweft.so" \
  "cc -std=c11 -Wall -Wextra -Werror -o '$dir/embed-static' examples/embed/host.c \$(pkg-config --cflags --libs weft-static) \
   && ! ldd '$dir/embed-static' | grep -q libweft && (cd examples/embed && '$dir/embed-static' | grep -q '^the door is open at frame 2$')"
printf 'cmake_minimum_required(VERSION 3.16)\nproject(v C)\nfind_package(weft 99 QUIET)\nif(weft_FOUND)\n  message(FATAL_ERROR found)\nendif()\n' \
  > "$dir/CMakeLists.txt"
check "find_package(weft 99) refuses this version" \
  "cmake -S '$dir' -B '$dir/cmake-v' -DCMAKE_PREFIX_PATH='$prefix' > '$dir/cmake-v.log' 2>&1"

make -s --no-print-directory BUILD="$build" install DESTDIR="$dir/dest" PREFIX=/usr > "$dir/dest.log" 2>&1
check "DESTDIR is honoured" "[ -f '$dir/dest/usr/include/weft.h' ] && grep -q '^prefix=/usr$' '$dir/dest/usr/lib/pkgconfig/weft.pc' && [ -f '$dir/dest/usr/lib/cmake/weft/weftConfig.cmake' ]"
make -s --no-print-directory BUILD="$build" uninstall DESTDIR="$dir/dest" PREFIX=/usr > /dev/null 2>&1
check "make uninstall removes what install put there" \
  "[ -z \"\$(find '$dir/dest' -type f -o -type l)\" ]"

# The library without the debugger (make DEBUGGER=0) needs no cJSON: not
# the shared library, not a program on the archive, not the package.
lean="$build/lean"
make -s --no-print-directory BUILD="$lean" DEBUGGER=0 "$lean/libweft.so" "$lean/weft" > "$dir/lean.log" 2>&1
check "make DEBUGGER=0 builds the library and weft" "[ \$? -eq 0 ] || { cat '$dir/lean.log'; false; }"
check "...and ldd of its libweft.so shows no cJSON, nm no cJSON symbol" \
  "ldd '$lean/libweft.so' | grep -q libc.so && ! ldd '$lean/libweft.so' | grep -qi cjson && ! nm -D '$lean/libweft.so' | grep -q cJSON"
printf 'wait(0.1)\nprint("waited")\n' > "$dir/one.lua"
check "...nor ldd of its weft, which runs a script" \
  "! ldd '$lean/weft' | grep -qi cjson && '$lean/weft' run '$dir/one.lua' | grep -q '^waited$'"
"$lean/weft" run --debug 0 "$dir/one.lua" > "$dir/lean.out" 2>&1
check "...whose --debug says the debugger is not built in, and fails" \
  "[ \$? -eq 1 ] && grep -q 'not built into this library' '$dir/lean.out' || { cat '$dir/lean.out'; false; }"
make -s --no-print-directory BUILD="$lean" DEBUGGER=0 install PREFIX="$dir/lean-prefix" > "$dir/lean-install.log" 2>&1
check "...and its package asks for no cJSON (weft-static.pc, weftConfig.cmake)" \
  "! grep -q cjson '$dir/lean-prefix/lib/pkgconfig/weft-static.pc' '$dir/lean-prefix/lib/pkgconfig/weft.pc' '$dir/lean-prefix/lib/cmake/weft/weftConfig.cmake' \
   && cc -std=c11 -o '$dir/embed-lean' examples/embed/host.c \$(PKG_CONFIG_PATH='$dir/lean-prefix/lib/pkgconfig' pkg-config --cflags --libs weft-static) \
   && (cd examples/embed && '$dir/embed-lean' | grep -q '^the door is open at frame 2$')"

cd "$top"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
