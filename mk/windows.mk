# Windows: weft cross-built with Debian's mingw-w64 against Lua 5.4, cJSON
# and cmocka built from Debian's own source packages, tested under wine64
# headless (included by the top Makefile).
#   make test-windows   build everything in build-win/ and run the tests under wine
#
# The sources are the Makefile's lists (HOST_SRC, BINDINGS_SRC, the Lua
# parts); what differs on Windows is chosen by #ifdef _WIN32 in them.
# build-win/src and build-win/deps are kept between runs, so only weft is
# rebuilt.

# make test-embed builds examples/embed with CMake as well (cmake/).
DEPS       += cmd:cmake:cmake

WIN        := build-win
WIN_CC     ?= x86_64-w64-mingw32-gcc
WIN_AR     ?= x86_64-w64-mingw32-ar
WINE       ?= /usr/lib/wine/wine64
WIN_DEPS   := cmd:$(WIN_CC):mingw-w64 file:$(WINE):wine64 cmd:wine:wine cmd:cmake:cmake \
              cmd:dpkg-source:dpkg-dev cmd:xxd:xxd

WIN_CFLAGS := -std=c11 -D_POSIX_C_SOURCE=200809L -g -O2 $(WARN) -MMD -MP -iquote host
WIN_INC    := -I$(WIN)/deps/include
# Everything static, so the programs need no DLL beside them under wine.
WIN_LIBS   := -static -L$(WIN)/deps/lib -llua -lcjson -lws2_32 -lm -lpthread

WIN_OBJ    := $(HOST_SRC:%.c=$(WIN)/%.o) $(BINDINGS_SRC:%.c=$(WIN)/%.o)
# The C tests that do not run on Windows, and why:
#   test_alloc_sweep  runs each case in a child made by fork() and reads its wait status
#   test_watch        drives the watcher with POSIX file operations (symlink, link, mkfifo,
#                     utimensat, rename over an existing file) and inotify's queue overflow;
#                     on Windows test_plat checks the change notifications and test_reload
#                     a save landing through the watcher
WIN_CTEST_SKIP := test_alloc_sweep test_watch
WIN_CTEST  := $(filter-out $(WIN_CTEST_SKIP:%=$(WIN)/tests/%.exe),$(CTEST_SRC:tests/%.c=$(WIN)/tests/%.exe))
WIN_DEPLIB := $(WIN)/deps/lib/liblua.a $(WIN)/deps/lib/libcjson.a
WIN_PKGS   := lua5.4 cjson cmocka

.PHONY: test-windows windows-build

test-windows: deps
	@$(MAKE) --no-print-directory deps DEPS="$(WIN_DEPS)"
	@$(MAKE) --no-print-directory $(BUILD)/weft windows-build
	@echo "== under wine: the C tests, weft.exe test, examples/embed, recordings replayed across systems"
	@sh tests/windows/run.sh $(WIN) $(BUILD)/weft "$(WINE)" $(WIN_CTEST)

windows-build: $(WIN)/weft.exe $(WIN)/libweft.a $(WIN)/embed.exe $(WIN_CTEST)

# ---- Debian's sources, cross-built once ----

$(WIN)/src/.fetched:
	sh mk/debian-src.sh $(WIN)/src $(WIN_PKGS)
	@touch $@

# Lua as Debian builds it (LUA_COMPAT_5_3), without the two programs, with
# weft's stop check and string hash seed (mk/lua.mk).
$(WIN)/deps/lib/liblua.a: $(WIN)/src/.fetched mk/lua.mk mk/lua/edit.sh mk/lua/weft_luai.c mk/lua/weft_luai.h
	@rm -rf $(WIN)/deps/lua && mkdir -p $(WIN)/deps/lua/src $(WIN)/deps/lib $(WIN)/deps/include
	@echo "cross-building Lua from $$(ls -d $(WIN)/src/lua5.4-*/)"
	@cp $(WIN)/src/lua5.4-*/src/*.[ch] $(WIN)/deps/lua/src/
	@sh mk/lua/edit.sh $(WIN)/src/lua5.4-*/src/lvm.c $(WIN)/deps/lua/src/lvm.c
	@cp mk/lua/weft_luai.c $(WIN)/deps/lua/src/
	@cd $(WIN)/deps/lua && ls src/*.c | grep -v '/luac\?\.c$$' | \
	  xargs -P 2 -n 4 $(WIN_CC) -O2 -DLUA_COMPAT_5_3 $(LUA_SEED) -iquote $(CURDIR)/mk/lua -c
	$(WIN_AR) rcs $@ $(WIN)/deps/lua/*.o
	cp $(WIN)/deps/lua/src/lua.h $(WIN)/deps/lua/src/luaconf.h $(WIN)/deps/lua/src/lualib.h \
	  $(WIN)/deps/lua/src/lauxlib.h $(WIN)/deps/include/

$(WIN)/deps/lib/libcjson.a: $(WIN)/src/.fetched
	@mkdir -p $(WIN)/deps/lib $(WIN)/deps/include/cjson
	$(WIN_CC) -O2 -c $(WIN)/src/cjson-*/cJSON.c -o $(WIN)/deps/cJSON.o
	$(WIN_AR) rcs $@ $(WIN)/deps/cJSON.o
	cp $(WIN)/src/cjson-*/cJSON.h $(WIN)/deps/include/cjson/

$(WIN)/deps/lib/libcmocka.a: $(WIN)/src/.fetched
	@mkdir -p $(WIN)/deps/lib $(WIN)/deps/include
	cmake -S $$(ls -d $(WIN)/src/cmocka-*/) -B $(WIN)/deps/cmocka -DCMAKE_TOOLCHAIN_FILE=$(CURDIR)/mk/mingw-w64.cmake \
	  -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS=-D__USE_MINGW_ANSI_STDIO=1 -DWITH_STATIC_LIB=ON \
	  -DWITH_EXAMPLES=OFF -DUNIT_TESTING=OFF > $(WIN)/deps/cmocka.log 2>&1 && \
	cmake --build $(WIN)/deps/cmocka --target cmocka-static >> $(WIN)/deps/cmocka.log 2>&1 || \
	  { cat $(WIN)/deps/cmocka.log; exit 1; }
	cp $$(find $(WIN)/deps/cmocka -name 'libcmocka-static.a' | head -1) $@
	cp $(WIN)/src/cmocka-*/include/cmocka.h $(WIN)/deps/include/

# ---- weft ----

# host/ stays plain C here too: no Lua, no cJSON on its include path.
$(WIN)/host/%.o: host/%.c
	@mkdir -p $(dir $@)
	$(WIN_CC) $(WIN_CFLAGS) $(LIB_CFLAGS) -c $< -o $@

# The embedded Lua parts are the native build's xxd output ($(BUILD)/gen).
$(WIN)/bindings/%.o: bindings/%.c | $(WIN_DEPLIB) $(LUA_GEN)
	@mkdir -p $(dir $@)
	$(WIN_CC) $(WIN_CFLAGS) $(LIB_CFLAGS) -iquote $(BUILD)/gen -iquote mk/lua $(WIN_INC) -c $< -o $@

# The weft program, like an installed program, sees weft.h on the include path.
$(WIN)/cli/%.o: cli/%.c | $(WIN_DEPLIB)
	@mkdir -p $(dir $@)
	$(WIN_CC) $(WIN_CFLAGS) $(WIN_INC) -I bindings -c $< -o $@

$(WIN)/libweft.a: $(WIN_OBJ)
	@rm -f $@
	$(WIN_AR) rcs $@ $^

$(WIN)/weft.exe: $(WIN)/cli/main.o $(WIN)/cli/mialloc.o $(WIN)/libweft.a
	$(WIN_CC) -o $@ $^ $(WIN_LIBS)

$(WIN)/embed.exe: examples/embed/host.c $(WIN)/libweft.a
	$(WIN_CC) -std=c11 -Wall -Wextra -Werror $(WIN_INC) -Ibindings -Ihost -o $@ $< $(WIN)/libweft.a $(WIN_LIBS)

# As in the Makefile: the embedder's test sees every call weft makes to
# the C library's allocator (Windows has no strndup).
$(WIN)/tests/test_embedder.exe: WIN_TEST_LDFLAGS := -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc \
  -Wl,--wrap=free,--wrap=strdup,--wrap=fopen

# cmocka declares print_error with the plain printf format, which GCC
# checks as Microsoft's (no %zu) on Windows; the library prints with
# mingw's C99 printf (above), so the tests' %zu are right.
$(WIN)/tests/%.exe: tests/%.c $(WIN)/libweft.a $(WIN)/deps/lib/libcmocka.a
	@mkdir -p $(dir $@)
	$(WIN_CC) $(WIN_CFLAGS) -Wno-format $(WIN_INC) -I bindings $(WIN_TEST_LDFLAGS) -o $@ $< $(WIN)/libweft.a -lcmocka $(WIN_LIBS)

-include $(shell find $(WIN) -name '*.d' -not -path '$(WIN)/deps/*' 2>/dev/null)
