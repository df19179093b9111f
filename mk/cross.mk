# Linux cross builds, each in a directory of its own, with Lua 5.4 (with
# weft's stop check), cJSON and cmocka built from Debian's source
# packages for the target (mk/debian-src.sh, as mk/windows.mk does), then
# every C test and `weft test tests/lua scripts` run on this machine
# (tests/cross/run.sh); included by the top Makefile.
#   make test-32     i386 (i686-linux-gnu-gcc) in build-32/, run natively
#   make test-arm64  aarch64 (aarch64-linux-gnu-gcc) in build-arm64/, run under qemu-aarch64
#   make test-musl   x86-64 against musl (musl-gcc) in build-musl/, run natively
# Lua, cJSON and cmocka are static libraries; the programs are linked
# against the target's C library as any program is (the embedder's test
# wraps the C library's malloc, which a static C library would call
# itself). DIR/src and DIR/deps are kept between runs.
#
# i386 uses Debian's i686 cross compiler rather than gcc-multilib's -m32:
# gcc-multilib conflicts with Debian's aarch64 cross compiler
# (gcc-12-aarch64-linux-gnu: Conflicts: gcc-multilib), so one machine
# could not hold both targets; the i686 toolchain builds the same i386
# code beside it.

X32_DIR     := build-32
X32_CC      := i686-linux-gnu-gcc
X32_AR      := i686-linux-gnu-ar
X32_CFLAGS  := -Wno-psabi
# This machine's kernel runs i386 programs; their loader and C library
# are the cross toolchain's (no i386 runtime package needed).
X32_LDFLAGS := -Wl,--dynamic-linker=/usr/i686-linux-gnu/lib/ld-linux.so.2 -Wl,-rpath=/usr/i686-linux-gnu/lib
X32_RUN     :=
X32_CMAKE   := -DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR=i686
X32_DEPS    := cmd:$(X32_CC):gcc-i686-linux-gnu

A64_DIR     := build-arm64
A64_CC      := aarch64-linux-gnu-gcc
A64_AR      := aarch64-linux-gnu-ar
A64_CFLAGS  :=
A64_LDFLAGS :=
A64_RUN     := qemu-aarch64-static -L /usr/aarch64-linux-gnu
A64_CMAKE   := -DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR=aarch64
A64_DEPS    := cmd:$(A64_CC):gcc-aarch64-linux-gnu cmd:qemu-aarch64-static:qemu-user-static

MUSL_DIR    := build-musl
MUSL_CC     := musl-gcc
MUSL_AR     := ar
MUSL_CFLAGS :=
MUSL_LDFLAGS :=
MUSL_RUN    :=
MUSL_CMAKE  :=
MUSL_DEPS   := cmd:$(MUSL_CC):musl-tools

CROSS_DEPS  := cmd:cmake:cmake cmd:dpkg-source:dpkg-dev cmd:xxd:xxd cmd:file:file
CROSS_PKGS  := lua5.4 cjson cmocka

.PHONY: test-32 test-arm64 test-musl

# $(1): the prefix of the variables above; $(2): the target's name.
define CROSS_BUILD
$(1)_BASE   := -std=c11 -D_POSIX_C_SOURCE=200809L -g -O2 $$(WARN) -MMD -MP -iquote host $$($(1)_CFLAGS)
$(1)_INC    := -I$$($(1)_DIR)/deps/include
$(1)_LIBS   := $$($(1)_LDFLAGS) -L$$($(1)_DIR)/deps/lib -llua -lcjson -lm -lpthread -ldl
$(1)_OBJ    := $$(HOST_SRC:%.c=$$($(1)_DIR)/%.o) $$(BINDINGS_SRC:%.c=$$($(1)_DIR)/%.o)
$(1)_CTEST  := $$(CTEST_SRC:tests/%.c=$$($(1)_DIR)/tests/%)
$(1)_DEPLIB := $$($(1)_DIR)/deps/lib/liblua.a $$($(1)_DIR)/deps/lib/libcjson.a

test-$(2): deps
	@$$(MAKE) --no-print-directory deps DEPS="$$($(1)_DEPS) $$(CROSS_DEPS)"
	@start=$$$$(date +%s); $$(MAKE) --no-print-directory $(2)-build && \
	  echo "$(2): the build took $$$$(($$$$(date +%s) - start)) s"
	@echo "== $(2): the C tests and weft test tests/lua scripts ($$($(1)_DIR)/)"
	@sh tests/cross/run.sh $(2) $$($(1)_DIR) "$$($(1)_RUN)" $$($(1)_CTEST)

.PHONY: $(2)-build
$(2)-build: $$($(1)_DIR)/weft $$($(1)_CTEST)

$$($(1)_DIR)/src/.fetched:
	sh mk/debian-src.sh $$($(1)_DIR)/src $$(CROSS_PKGS)
	@touch $$@

# Lua as Debian builds it (LUA_COMPAT_5_3, LUA_USE_POSIX as mk/lua.mk),
# without its two programs, with weft's stop check and string hash seed
# (LUA_SEED: tables lay out, and pairs walks them, as the native build's).
$$($(1)_DIR)/deps/lib/liblua.a: $$($(1)_DIR)/src/.fetched mk/lua.mk mk/lua/edit.sh mk/lua/multiarch.sh mk/lua/weft_luai.c mk/lua/weft_luai.h
	@rm -rf $$($(1)_DIR)/deps/lua && mkdir -p $$($(1)_DIR)/deps/lua/src $$($(1)_DIR)/deps/lib $$($(1)_DIR)/deps/include
	@echo "building Lua for $(2) from $$$$(ls -d $$($(1)_DIR)/src/lua5.4-*/)"
	@cp $$($(1)_DIR)/src/lua5.4-*/src/*.[ch] $$($(1)_DIR)/deps/lua/src/
	@sh mk/lua/edit.sh $$($(1)_DIR)/src/lua5.4-*/src/lvm.c $$($(1)_DIR)/deps/lua/src/lvm.c
	@cp mk/lua/weft_luai.c $$($(1)_DIR)/deps/lua/src/
	@sh mk/lua/multiarch.sh $$($(1)_CC) > $$($(1)_DIR)/deps/lua/src/lua5.4-deb-multiarch.h
	@cd $$($(1)_DIR)/deps/lua && ls src/*.c | grep -v '/luac\?\.c$$$$' | \
	  xargs -P 2 -n 4 $$($(1)_CC) $$($(1)_CFLAGS) -std=gnu11 -g -O2 -DLUA_COMPAT_5_3 -DLUA_USE_POSIX $$(LUA_SEED) \
	    -iquote $$(CURDIR)/mk/lua -c
	$$($(1)_AR) rcs $$@ $$($(1)_DIR)/deps/lua/*.o
	cp $$($(1)_DIR)/deps/lua/src/lua.h $$($(1)_DIR)/deps/lua/src/luaconf.h $$($(1)_DIR)/deps/lua/src/lualib.h \
	  $$($(1)_DIR)/deps/lua/src/lauxlib.h $$($(1)_DIR)/deps/lua/src/lua5.4-deb-multiarch.h $$($(1)_DIR)/deps/include/

$$($(1)_DIR)/deps/lib/libcjson.a: $$($(1)_DIR)/src/.fetched
	@mkdir -p $$($(1)_DIR)/deps/lib $$($(1)_DIR)/deps/include/cjson
	$$($(1)_CC) $$($(1)_CFLAGS) -O2 -c $$($(1)_DIR)/src/cjson-*/cJSON.c -o $$($(1)_DIR)/deps/cJSON.o
	$$($(1)_AR) rcs $$@ $$($(1)_DIR)/deps/cJSON.o
	cp $$($(1)_DIR)/src/cjson-*/cJSON.h $$($(1)_DIR)/deps/include/cjson/

$$($(1)_DIR)/deps/lib/libcmocka.a: $$($(1)_DIR)/src/.fetched
	@mkdir -p $$($(1)_DIR)/deps/lib $$($(1)_DIR)/deps/include
	cmake -S $$$$(ls -d $$($(1)_DIR)/src/cmocka-*/) -B $$($(1)_DIR)/deps/cmocka $$($(1)_CMAKE) \
	  -DCMAKE_C_COMPILER=$$($(1)_CC) -DCMAKE_AR=$$$$(command -v $$($(1)_AR)) \
	  -DCMAKE_C_FLAGS="$$($(1)_CFLAGS)" -DCMAKE_BUILD_TYPE=Release -DWITH_STATIC_LIB=ON \
	  -DWITH_EXAMPLES=OFF -DUNIT_TESTING=OFF > $$($(1)_DIR)/deps/cmocka.log 2>&1 && \
	cmake --build $$($(1)_DIR)/deps/cmocka --target cmocka-static >> $$($(1)_DIR)/deps/cmocka.log 2>&1 || \
	  { cat $$($(1)_DIR)/deps/cmocka.log; exit 1; }
	cp $$$$(find $$($(1)_DIR)/deps/cmocka -name 'libcmocka-static.a' | head -1) $$@
	cp $$($(1)_DIR)/src/cmocka-*/include/cmocka.h $$($(1)_DIR)/deps/include/

# host/ stays plain C: no Lua, no cJSON on its include path.
$$($(1)_DIR)/host/%.o: host/%.c
	@mkdir -p $$(dir $$@)
	$$($(1)_CC) $$($(1)_BASE) $$(LIB_CFLAGS) -c $$< -o $$@

# The embedded Lua parts are the native build's xxd output ($$(BUILD)/gen).
$$($(1)_DIR)/bindings/%.o: bindings/%.c | $$($(1)_DEPLIB) $$(LUA_GEN)
	@mkdir -p $$(dir $$@)
	$$($(1)_CC) $$($(1)_BASE) $$(LIB_CFLAGS) -iquote $$(BUILD)/gen -iquote mk/lua $$($(1)_INC) -c $$< -o $$@

$$($(1)_DIR)/cli/%.o: cli/%.c | $$($(1)_DEPLIB)
	@mkdir -p $$(dir $$@)
	$$($(1)_CC) $$($(1)_BASE) $$($(1)_INC) -I bindings -c $$< -o $$@

$$($(1)_DIR)/libweft.a: $$($(1)_OBJ)
	@rm -f $$@
	$$($(1)_AR) rcs $$@ $$^

$$($(1)_DIR)/weft: $$($(1)_DIR)/cli/main.o $$($(1)_DIR)/cli/mialloc.o $$($(1)_DIR)/libweft.a
	$$($(1)_CC) -o $$@ $$^ $$($(1)_LIBS)

# As in the Makefile: the embedder's test sees every call weft makes to
# the C library's allocator.
$$($(1)_DIR)/tests/test_embedder: $(1)_TEST_LDFLAGS := -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc \
  -Wl,--wrap=free,--wrap=strdup,--wrap=strndup,--wrap=fopen

$$($(1)_DIR)/tests/%: tests/%.c $$($(1)_DIR)/libweft.a $$($(1)_DIR)/deps/lib/libcmocka.a
	@mkdir -p $$(dir $$@)
	$$($(1)_CC) $$($(1)_BASE) $$($(1)_INC) -I bindings $$($(1)_TEST_LDFLAGS) -o $$@ $$< $$($(1)_DIR)/libweft.a \
	  -lcmocka $$($(1)_LIBS)

-include $$(shell find $$($(1)_DIR) -name '*.d' -not -path '$$($(1)_DIR)/deps/*' 2>/dev/null)
endef

$(eval $(call CROSS_BUILD,X32,32))
$(eval $(call CROSS_BUILD,A64,arm64))
$(eval $(call CROSS_BUILD,MUSL,musl))
