# weft — build, test, run. `make help` lists the targets.
#
# Every user-facing target first checks the Debian packages it needs and
# installs the missing ones (apt-get when root; otherwise it prints the
# exact `sudo apt-get install` line and stops).

.DEFAULT_GOAL := all

BUILD    ?= build
CC       ?= cc
SAN      ?=
OPT      ?= -O2
WARN     := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
CFLAGS   ?=
CFLAGS   += -std=c11 -D_POSIX_C_SOURCE=200809L -g $(OPT) $(WARN) -MMD -MP -iquote host
# SAN=1: AddressSanitizer + UBSan (make asan); SAN=thread: ThreadSanitizer
# (make tsan). Lua is compiled with SAN_CFLAGS too (mk/lua.mk).
ifeq ($(SAN),thread)
SAN_CFLAGS := -fsanitize=thread -fno-omit-frame-pointer
CFLAGS   += $(SAN_CFLAGS) -DWEFT_ASSERTS
LDFLAGS  += -fsanitize=thread
else ifneq ($(SAN),)
SAN_CFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
CFLAGS   += $(SAN_CFLAGS) -DWEFT_ASSERTS
LDFLAGS  += -fsanitize=address,undefined
endif

# The library's objects export only what weft.h and weft_base.h declare
# (WEFT_API): everything else is hidden from the shared library.
LIB_CFLAGS := -fvisibility=hidden -DWEFT_BUILD

# Evaluated when used, so packages installed by `deps` are seen. Lua is
# weft's own build of Debian's source (mk/lua.mk), inside libweft.
LUA_CFLAGS = -I$(BUILD)/lua/include $(if $(filter 0,$(DEBUGGER)),,$(shell pkg-config --cflags libcjson))
LUA_LIBS   = $(if $(filter 0,$(DEBUGGER)),,$(shell pkg-config --libs libcjson))
CMOCKA_LIBS = $(shell pkg-config --libs cmocka)

HOST_SRC     := $(wildcard host/*.c)
# DEBUGGER=0 leaves the debugger out (bindings/debugger/absent.c stands
# in for its calls): the library then needs no cJSON.
DEBUGGER     ?= 1
ifeq ($(DEBUGGER),0)
BINDINGS_SRC := $(filter-out $(filter-out %/absent.c,$(wildcard bindings/debugger/*.c)),$(wildcard bindings/*.c bindings/*/*.c))
else
BINDINGS_SRC := $(filter-out bindings/debugger/absent.c,$(wildcard bindings/*.c bindings/*/*.c))
endif
# The Lua parts of the bindings, embedded as static const arrays (xxd -i)
# in a header the one file loading each part includes.
LUA_PARTS    := $(wildcard bindings/lua/*.lua)
LUA_GEN      := $(LUA_PARTS:bindings/lua/%.lua=$(BUILD)/gen/lua_%.h)
HOST_OBJ     := $(HOST_SRC:%.c=$(BUILD)/%.o)
BINDINGS_OBJ := $(BINDINGS_SRC:%.c=$(BUILD)/%.o)
PIC_OBJ      := $(HOST_SRC:%.c=$(BUILD)/pic/%.o) $(BINDINGS_SRC:%.c=$(BUILD)/pic/%.o)
CTEST_SRC    := $(wildcard tests/test_*.c)
# The library's objects, relative to $(BUILD) (tests/layers.sh).
LIB_OBJ_NAMES = $(HOST_SRC:%.c=%.o) $(BINDINGS_SRC:%.c=%.o)
# weft's own C, which .clang-format shapes (make test-layout checks).
FORMAT_SRC    = $(wildcard bindings/*.[ch] bindings/*/*.[ch] host/*.[ch] cli/*.[ch] demo/*.[ch] \
                  tests/*.[ch] tests/*/*.[ch] mk/lua/*.[ch])
# mimalloc for the programs' states (weft, weft-demo, the benchmarks),
# loaded at run time: cli/mialloc.c.
MIALLOC_OBJ  := $(BUILD)/cli/mialloc.o

# Installation (make install PREFIX=... DESTDIR=...).
PREFIX  ?= /usr/local
DESTDIR ?=
LIBDIR  := $(PREFIX)/lib
INCDIR  := $(PREFIX)/include
VERSION := $(shell sed -n 's/^\#define WEFT_VERSION_STRING "\(.*\)"/\1/p' bindings/weft.h)
MAJOR   := $(firstword $(subst ., ,$(VERSION)))
# The shared library's SONAME follows the binary interface (weft.h's
# WEFT_ABI_VERSION), not the version: libweft.so.$(SOMAJOR).
SOMAJOR := $(shell sed -n 's/^\#define WEFT_ABI_VERSION \([0-9]*\)$$/\1/p' bindings/weft.h)
CTEST_BIN    := $(CTEST_SRC:tests/%.c=$(BUILD)/tests/%)
# The host tests again over plat_posix_generic.c (WEFT_PLAT_GENERIC), the
# fallbacks of a POSIX system without Linux's pieces: the watcher polls,
# no CPU clock of another thread, waits on the default clock.
GENERIC_CTEST := $(patsubst %,$(BUILD)/tests/generic/%,test_plat test_watch test_jobs test_sync)
CTEST_BIN    += $(GENERIC_CTEST)
# And over plat_nothreads.c too (WEFT_PLAT_NOTHREADS, the web build's
# platform): no thread starts, so jobs run inline and the watcher polls.
NOTHREADS_CTEST := $(patsubst %,$(BUILD)/tests/nothreads/%,test_watch test_jobs test_sync)
CTEST_BIN    += $(NOTHREADS_CTEST)

# What the build needs, as kind:name:debian-package, where kind is pc (a
# pkg-config module), cmd (a command), file (a path) or lib (a shared
# library the dynamic linker knows). Included makefiles (demo/demo.mk,
# tests/bench/bench.mk) append to DEPS. mimalloc is the programs' choice
# for their states' blocks (cli/mialloc.c loads it at run time), not the
# library's.
DEPS := cmd:pkg-config:pkg-config pc:cmocka:libcmocka-dev cmd:lua5.4:lua5.4 \
        cmd:xxd:xxd pc:libcjson:libcjson-dev lib:libmimalloc.so.2:libmimalloc2.0 \
        cmd:node:nodejs cmd:npm:npm cmd:g++:g++ cmd:clang-format:clang-format

include mk/lua.mk
include demo/demo.mk
include tests/bench/bench.mk
-include mk/windows.mk
-include mk/cross.mk
-include mk/web.mk

.PHONY: stress all weft deps install uninstall check check-load test test-c test-lua test-cli test-layout test-save test-conformance test-suites test-embed test-demo test-docs test-dap test-profile usage run asan tsan bench fuzz fuzz-tape fuzz-io fuzz-save clean help

all: deps
	@$(MAKE) --no-print-directory weft

# Every target, one line each (tests/docs/run.sh checks that none is missing).
help:
	@echo "make             check the Debian packages, build build/weft and build/libweft.a"
	@echo "make run         build and start the demo game in a window, hot reload on"
	@echo "make check       the edit loop: test-layout, test-c, test-lua and test-cli"
	@echo "make check-load  make check 5 times in a row with a process burning every core beside it"
	@echo "make test        every suite: test-layout, test-c, test-lua, test-cli, test-conformance, test-suites, test-embed, test-dap, test-profile, test-demo, test-docs"
	@echo "make test-c      the C unit tests (build/tests/test_*)"
	@echo "make test-lua    the script tests: weft test tests/lua scripts"
	@echo "make test-cli    the weft program: exit codes, output, weft test's report"
	@echo "make test-save   saving the running world: loaded runs go on as saved ones did (tests/save, 300 random programs)"
	@echo "make test-layout the source's rooms: files under 1,000 lines, one owner per function, no include circle, no call up a layer (nm), clang-format's shape"
	@echo "make test-conformance  the same Lua scripts under lua5.4 and in weft tasks, outputs compared"
	@echo "make test-suites the upstream test suites of Lua libraries from Debian under lua5.4 and weft run, compared"
	@echo "make test-embed  install into a scratch prefix, build examples/embed against it with pkg-config and CMake, run it"
	@echo "make test-dap    the debugger, driven over its socket by a DAP client and by VS Code's (tests/dap/)"
	@echo "make test-profile  the profiler: a profile's files and totals, speedscope drawing one in headless Chromium"
	@echo "make test-demo   the demo's end-to-end tests, headless (and one under Xvfb)"
	@echo "make test-docs   runs every command README.md and docs/*.md show, checks their links"
	@echo "make usage       rewrites docs/programs.md's usage blocks from weft/weft-demo --help"
	@echo "make test-windows  cross-build with mingw-w64 (build-win/), run the C and script tests, embed and a replay under wine"
	@echo "make windows-build  what make test-windows builds, without running it"
	@echo "make test-32     i386 build (Debian's i686 cross gcc) in build-32/, every C and script test"
	@echo "make test-arm64  ARM64 build (aarch64 cross gcc) in build-arm64/, every C and script test under qemu"
	@echo "make test-musl   musl build (musl-gcc) in build-musl/, every C and script test"
	@echo "make 32-build, make arm64-build, make musl-build  what those build, without running it"
	@echo "make web         the demo and weft built to WebAssembly with Debian's emscripten in build-web/: the page, the playground"
	@echo "make web-build   what make web builds, without checking packages"
	@echo "make serve-web   serve build-web/ on http://localhost:8080 (WEB_PORT)"
	@echo "make test-web    the web build: weft test and the demo's tests under node, the page in headless Chromium"
	@echo "make bench-web   W1 and W0 of tests/bench under node beside native, ns per resume"
	@echo "make asan        the suites under AddressSanitizer + UBSan + LSan (build-asan/)"
	@echo "make tsan        two states on two threads, watchdog, jobs and profiler under ThreadSanitizer (build-tsan/)"
	@echo "make bench       build and run the benchmarks, print the table"
	@echo "make stress      the slow abuse cases (spawn bombs, runaways, hogs, huge loads): worst frames"
	@echo "make fuzz        the libFuzzer target for FUZZ_TIME seconds (default 60)"
	@echo "make fuzz-tape   the same over recordings (weft__tape_parse and a replay)"
	@echo "make fuzz-io     the same over io's file methods (reads, seeks, lines, reopens)"
	@echo "make fuzz-save   the same over saves: the persister's, then the whole world's (weft_load)"
	@echo "make demo-art    repaint assets/*.png with the art generator"
	@echo "make install     install the libraries, weft.h, weft_base.h, weft.pc, weft-static.pc, weftConfig.cmake and weft (PREFIX=/usr/local, DESTDIR)"
	@echo "make uninstall   remove what make install put there (same PREFIX and DESTDIR)"
	@echo "make deps        install the missing Debian packages (or print the apt-get line)"
	@echo "make weft        build build/weft and build/libweft.a without checking packages"
	@echo "make demo-run    build and start the demo (what make run does after deps)"
	@echo "make bench-run   run the benchmarks (what make bench does after deps)"
	@echo "make clean       remove build outputs"
	@echo "make help        this list"

# ---- dependencies ----

deps:
	@missing=""; \
	for d in $(DEPS); do \
	  kind=$${d%%:*}; rest=$${d#*:}; name=$${rest%%:*}; pkg=$${rest#*:}; \
	  case $$kind in \
	    pc) pkg-config --exists $$name 2>/dev/null || missing="$$missing $$pkg";; \
	    cmd) command -v $$name >/dev/null 2>&1 || missing="$$missing $$pkg";; \
	    file) [ -e $$name ] || missing="$$missing $$pkg";; \
	    lib) /sbin/ldconfig -p 2>/dev/null | grep -q "^[[:space:]]*$$name " || missing="$$missing $$pkg";; \
	  esac; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null || exit 1; \
	  else \
	    echo "missing packages; run:"; echo "  sudo apt-get install -y$$missing"; exit 1; \
	  fi; \
	fi

# ---- build ----

weft: $(BUILD)/weft $(BUILD)/libweft.a

# host/ is plain C: it is compiled without Lua's include path, so nothing
# there can include lua.h.
$(BUILD)/host/%.o: host/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LIB_CFLAGS) -c $< -o $@

$(BUILD)/%.o: %.c | $(LUA_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LIB_CFLAGS) $(LUA_CFLAGS) -c $< -o $@

$(BUILD)/gen/lua_%.h: bindings/lua/%.lua
	@mkdir -p $(dir $@)
	xxd -i -n weft_lua_$* $< > $@.tmp
	sed 's/^unsigned/static const unsigned/' $@.tmp > $@.tmp2
	mv $@.tmp2 $@; rm -f $@.tmp

# The bindings find the generated headers in $(BUILD)/gen, made first.
$(BINDINGS_OBJ) $(BINDINGS_SRC:%.c=$(BUILD)/pic/%.o): CFLAGS += -iquote $(BUILD)/gen -iquote mk/lua
$(BINDINGS_OBJ) $(BINDINGS_SRC:%.c=$(BUILD)/pic/%.o): | $(LUA_GEN) $(LUA_HDR)
# The persister (bindings/base/persist*.c), wait's fast path
# (bindings/core/wait_fast.h) and a task's resume read Lua's internals: they see the internal
# headers of each build's own copy of Lua's source.
LUAI_SRC     := $(wildcard bindings/base/persist*.c) bindings/core/wait.c bindings/core/task.c \
                bindings/waitables/combinators.c bindings/accounts/cost.c
$(LUAI_SRC:%.c=$(BUILD)/%.o) $(LUAI_SRC:%.c=$(BUILD)/pic/%.o): CFLAGS += -iquote $(LUA_OUT)/src
$(LUAI_SRC:%.c=$(X32_DIR)/%.o): X32_INC += -iquote $(X32_DIR)/deps/lua/src
$(LUAI_SRC:%.c=$(A64_DIR)/%.o): A64_INC += -iquote $(A64_DIR)/deps/lua/src
$(LUAI_SRC:%.c=$(MUSL_DIR)/%.o): MUSL_INC += -iquote $(MUSL_DIR)/deps/lua/src
$(LUAI_SRC:%.c=$(WIN)/%.o): WIN_INC += -iquote $(WIN)/deps/lua/src
$(LUAI_SRC:%.c=$(WEB)/%.o): WEB_INC += -iquote $(D)/lua/src

$(BUILD)/pic/host/%.o: host/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LIB_CFLAGS) -fPIC -c $< -o $@

$(BUILD)/pic/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LIB_CFLAGS) -fPIC $(LUA_CFLAGS) -c $< -o $@

$(BUILD)/libweft.a: $(HOST_OBJ) $(BINDINGS_OBJ) $(LUA_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/libweft.so: $(PIC_OBJ) $(LUA_PIC_OBJ)
	$(CC) $(LDFLAGS) -shared -Wl,-soname,libweft.so.$(SOMAJOR) -o $@ $^ $(LUA_LIBS) -lm -lpthread

# ---- install ----

# Installs what is built, and nothing else: no package is fetched here.
# Without the debugger, the package asks for no cJSON either.
NO_CJSON = $(if $(filter 0,$(DEBUGGER)),-e 's| -lcjson||' -e 's|"cjson;|"|')
install: $(BUILD)/weft $(BUILD)/libweft.a $(BUILD)/libweft.so $(LUA_OUT)/include/lua.hpp
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCDIR) $(DESTDIR)$(PREFIX)/bin
	install -m 644 $(BUILD)/libweft.a $(DESTDIR)$(LIBDIR)/libweft.a
	install -m 755 $(BUILD)/libweft.so $(DESTDIR)$(LIBDIR)/libweft.so.$(VERSION)
	ln -sf libweft.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libweft.so.$(SOMAJOR)
	ln -sf libweft.so.$(SOMAJOR) $(DESTDIR)$(LIBDIR)/libweft.so
	install -m 644 bindings/weft.h host/weft_base.h $(DESTDIR)$(INCDIR)/
	install -d $(DESTDIR)$(INCDIR)/weft
	install -m 644 $(LUA_HEADERS:%=$(BUILD)/lua/include/%) $(DESTDIR)$(INCDIR)/weft/
	for pc in weft weft-static; do \
	  sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' $(NO_CJSON) $$pc.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/$$pc.pc; done
	install -m 755 $(BUILD)/weft $(DESTDIR)$(PREFIX)/bin/weft
	install -d $(DESTDIR)$(LIBDIR)/cmake/weft
	for f in weftConfig weftConfigVersion; do \
	  sed -e 's|@VERSION@|$(VERSION)|' -e 's|@SOMAJOR@|$(SOMAJOR)|' -e 's|@MAJOR@|$(MAJOR)|' $(NO_CJSON) cmake/$$f.cmake.in > $(DESTDIR)$(LIBDIR)/cmake/weft/$$f.cmake; done

uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/libweft.a $(DESTDIR)$(LIBDIR)/libweft.so \
	  $(DESTDIR)$(LIBDIR)/libweft.so.$(SOMAJOR) $(DESTDIR)$(LIBDIR)/libweft.so.$(VERSION) \
	  $(DESTDIR)$(INCDIR)/weft.h $(DESTDIR)$(INCDIR)/weft_base.h \
	  $(LUA_HEADERS:%=$(DESTDIR)$(INCDIR)/weft/%) \
	  $(DESTDIR)$(LIBDIR)/pkgconfig/weft.pc $(DESTDIR)$(LIBDIR)/pkgconfig/weft-static.pc $(DESTDIR)$(PREFIX)/bin/weft \
	  $(DESTDIR)$(LIBDIR)/cmake/weft/weftConfig.cmake $(DESTDIR)$(LIBDIR)/cmake/weft/weftConfigVersion.cmake

# The weft program is a user of the library: it sees weft.h as an
# installed program would, on the include path.
$(BUILD)/cli/%.o: cli/%.c | $(LUA_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LUA_CFLAGS) -I bindings -c $< -o $@

$(BUILD)/weft: $(BUILD)/cli/main.o $(MIALLOC_OBJ) $(BUILD)/libweft.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LUA_LIBS) -lm -lpthread -ldl

# The embedder's test sees every call weft makes to the C library's
# allocator: none may happen.
$(BUILD)/tests/test_embedder: LDFLAGS += -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc \
  -Wl,--wrap=free,--wrap=strdup,--wrap=strndup,--wrap=fopen
$(BUILD)/tests/test_embedder $(BUILD)/tests/test_capi: CFLAGS += -I bindings

$(BUILD)/generic/host/%.o: host/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LIB_CFLAGS) -DWEFT_PLAT_GENERIC -c $< -o $@

$(GENERIC_CTEST): $(BUILD)/tests/generic/%: tests/%.c $(HOST_SRC:%.c=$(BUILD)/generic/%.o)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DWEFT_PLAT_GENERIC $(LDFLAGS) -o $@ $^ $(CMOCKA_LIBS) -lm -lpthread

$(BUILD)/nothreads/host/%.o: host/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LIB_CFLAGS) -DWEFT_PLAT_GENERIC -DWEFT_PLAT_NOTHREADS -c $< -o $@

$(NOTHREADS_CTEST): $(BUILD)/tests/nothreads/%: tests/%.c $(HOST_SRC:%.c=$(BUILD)/nothreads/%.o)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DWEFT_PLAT_GENERIC -DWEFT_PLAT_NOTHREADS $(LDFLAGS) -o $@ $^ $(CMOCKA_LIBS) -lm -lpthread

$(BUILD)/tests/%: tests/%.c $(BUILD)/libweft.a | $(LUA_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LUA_CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libweft.a $(LUA_LIBS) $(CMOCKA_LIBS) -lm -lpthread

# ---- tests ----

# With -j, each suite's output is printed whole when it ends.
check: deps
	@$(MAKE) --no-print-directory --output-sync=target test-layout test-c test-lua test-cli test-save

# Anything that depends on time, tried with every core busy (tests/load.sh).
check-load: deps
	@$(MAKE) --no-print-directory $(CTEST_BIN) $(BUILD)/weft
	@sh tests/load.sh 5 $(MAKE) --no-print-directory check

test: deps
	@$(MAKE) --no-print-directory --output-sync=target test-layout test-c test-lua test-cli test-save test-conformance \
	  test-suites test-embed test-dap test-profile test-demo test-docs

test-c: $(CTEST_BIN)
	@failed=""; for t in $(CTEST_BIN); do echo "== $$t"; $$t || failed="$$failed $$t"; done; \
	if [ -n "$$failed" ]; then echo "failed:$$failed"; exit 1; fi

test-lua: $(BUILD)/weft
	@echo "== the bindings' and the game's Lua compile (luac5.4 -p)"
	@for f in $(LUA_PARTS) $$(find scripts -name '*.lua'); do luac5.4 -p $$f || exit 1; done
	@echo "== weft test tests/lua scripts"
	@$(BUILD)/weft test tests/lua scripts

# The source's rooms: file sizes, one owner per function, no include circle.
test-layout: $(BUILD)/libweft.a
	@echo "== the library's layout"
	@sh tests/layout.sh
	@echo "== the library's layers, on the link graph (nm)"
	@sh tests/layers.sh $(BUILD) $(LIB_OBJ_NAMES) && sh tests/layers_test.sh $(BUILD) $(LIB_OBJ_NAMES)
	@echo "== the C in .clang-format's shape (clang-format -i FILE mends one)"
	@clang-format --dry-run --Werror $(FORMAT_SRC) && echo "$(words $(FORMAT_SRC)) files as clang-format writes them"

test-cli: $(BUILD)/weft
	@echo "== the weft program"
	@SAN=$(SAN) sh tests/cli/run.sh $(BUILD)/weft

# Saves of the running world: a loaded run goes on as the saved one did,
# over tests/save's programs and 300 random ones; bad saves are refused.
test-save: $(BUILD)/weft
	@echo "== saving and loading the running world (weft run --save-at, --load)"
	@sh tests/save/run.sh $(BUILD)/weft

# The documentation against the programs: usage blocks, make help, and
# every command README.md and docs/*.md show, and their links.
test-docs: $(BUILD)/weft $(DOCS_NEEDS)
	@echo "== the commands the docs show"
	@sh tests/docs/run.sh $(BUILD)

# The usage blocks in docs/programs.md, rewritten from the programs' --help.
usage: $(BUILD)/weft $(DOCS_NEEDS)
	@README=docs/programs.md sh tests/cli/usage.sh write $(BUILD)/weft $(DOCS_NEEDS)

test-dap: $(BUILD)/weft $(BUILD)/tests/dap/client $(BUILD)/node/installed $(DOCS_NEEDS)
	@echo "== the debugger over its socket (tests/dap)"
	@$(BUILD)/tests/dap/client $(BUILD)/weft $(filter %/weft-demo,$(DOCS_NEEDS))
	@echo "== the debugger as VS Code's own client drives it (tests/dap/vscode_test.js)"
	@WEFT=$(BUILD)/weft NODE_PATH=$(BUILD)/node/node_modules node --test tests/dap/vscode_test.js \
	  tests/dap/examples_test.js

# The profiler: a profile's files, their per-task totals, and speedscope
# drawing one under headless Chromium (installed here when missing; the
# browser check alone is skipped, saying so, when it cannot be).
test-profile: $(BUILD)/weft $(BUILD)/node/installed
	@echo "== the profiler: weft run --profile, its trace, speedscope in Chromium (tests/profile)"
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null 2>&1; } || \
	  echo "chromium is not installed and cannot be: the browser check is skipped"
	@WEFT=$(BUILD)/weft OUT=$(BUILD)/profile NODE_PATH=$(BUILD)/node/node_modules node --test tests/profile/profile_test.js

# The tests' npm packages (VS Code's DAP client, speedscope's offline
# build), pinned, installed into $(BUILD)/node by npm.
NODE_DEPS := @vscode/debugadapter-testsupport@1.68.0 speedscope@1.25.0
$(BUILD)/node/installed:
	@mkdir -p $(dir $@)
	@echo '{"private": true}' > $(dir $@)package.json
	cd $(dir $@) && npm install --no-audit --no-fund --silent $(NODE_DEPS)
	@touch $@

test-conformance: $(BUILD)/weft
	@echo "== Lua conformance: the same scripts under lua5.4 and in weft tasks"
	@sh tests/conformance/run.sh $(BUILD)/weft

# Upstream test suites of Lua libraries (tests/suites/suites.txt), their
# Debian source packages fetched into build/suites/src: the same test
# files under lua5.4 and as weft run's main script, results compared,
# the differences tests/suites/expected.txt lists (and says why) apart.
test-suites: $(BUILD)/weft
	@echo "== upstream test suites of Lua libraries under lua5.4 and weft run (tests/suites)"
	@sh tests/suites/run.sh $(BUILD)/weft

test-embed: $(BUILD)/weft $(BUILD)/libweft.a $(BUILD)/libweft.so
	@echo "== embedding from the installed package (examples/embed)"
	@sh tests/embed/run.sh $(BUILD)
	@echo "== the shared library's boundary"
	@sh tests/embed/exports.sh $(BUILD)

asan: deps
	@$(MAKE) --no-print-directory BUILD=build-asan SAN=1 OPT=-O1 test-c test-lua test-cli test-save test-conformance test-dap test-demo test-docs

# Two states on two threads at once (runaways the watchdog stops, waits,
# jobs, a profile: tests/tsan/tsan.c), then the jobs' and the watchdog's
# unit tests, weft and its Lua under ThreadSanitizer: any report fails
# (tests/tsan/run.sh).
tsan: deps
	@$(MAKE) --no-print-directory BUILD=build-tsan SAN=thread OPT=-O1 build-tsan/tests/tsan/tsan \
	  build-tsan/tests/test_jobs build-tsan/tests/test_watchdog
	@sh tests/tsan/run.sh build-tsan

bench: deps
	@$(MAKE) --no-print-directory bench-run

# The abuse cases too slow for make test, each in a process of its own:
# the worst frame of each, against 50 ms (tests/stress/stress.c).
stress: deps $(BUILD)/weft-stress
	@echo "== stress: worst frames of the abuse cases (default budgets, 1/60 s steps)"
	@$(BUILD)/weft-stress

$(BUILD)/weft-stress: tests/stress/stress.c $(BUILD)/libweft.a
	$(CC) $(CFLAGS) $(LUA_CFLAGS) -I bindings $(LDFLAGS) -o $@ $< $(BUILD)/libweft.a $(LUA_LIBS) -lm -lpthread

# The fuzz targets: libFuzzer (clang) with ASan + UBSan over the library
# and its Lua, compiled together from source; FUZZ_TIME seconds each,
# corpora kept in build-fuzz/.
FUZZ_TIME ?= 60
FUZZ_SRC = $(HOST_SRC) $(BINDINGS_SRC) $(LUA_CORE:%=$(LUA_OUT)/src/%.c) mk/lua/weft_luai.c
FUZZ_CC  = clang -std=gnu11 -D_POSIX_C_SOURCE=200809L -g -O1 -fsanitize=fuzzer,address,undefined \
           -DLUA_COMPAT_5_3 -DLUA_USE_POSIX $(LUA_SEED) -iquote host -iquote mk/lua -iquote $(BUILD)/gen $(LUA_CFLAGS) \
           -iquote $(LUA_OUT)/src
FUZZ_NEEDS = deps $(LUA_GEN) $(LUA_HDR)
define fuzz_clang
	@command -v clang >/dev/null 2>&1 || { if [ "$$(id -u)" = 0 ]; then apt-get install -y -qq clang >/dev/null; else echo "  sudo apt-get install -y clang"; exit 1; fi; }
	@mkdir -p build-fuzz/$(1)
	$(FUZZ_CC) $(FUZZ_SRC) tests/fuzz/$(2).c -o build-fuzz/$(2) $(LUA_LIBS) -lm -lpthread
endef

# Over script text, with a dictionary of every function and extreme argument.
fuzz: $(FUZZ_NEEDS)
	$(call fuzz_clang,corpus,fuzz_script)
	build-fuzz/fuzz_script -max_total_time=$(FUZZ_TIME) -max_len=4096 -timeout=10 -rss_limit_mb=4096 \
	  -dict=tests/fuzz/script.dict build-fuzz/corpus tests/fuzz/seeds

# Over io's file methods (reads, seeks by any 64-bit offset, lines, reopens, closes).
fuzz-io: $(FUZZ_NEEDS)
	$(call fuzz_clang,io-corpus,fuzz_io)
	build-fuzz/fuzz_io -max_total_time=$(FUZZ_TIME) -max_len=2000 -timeout=10 -rss_limit_mb=4096 \
	  build-fuzz/io-corpus

# Over recordings (weft__tape_parse, then a replay).
fuzz-tape: $(FUZZ_NEEDS)
	$(call fuzz_clang,tape-corpus,fuzz_tape)
	build-fuzz/fuzz_tape -max_total_time=$(FUZZ_TIME) -max_len=32768 -timeout=10 -rss_limit_mb=4096 \
	  build-fuzz/tape-corpus tests/fuzz/seeds-tape

# Over saves, FUZZ_TIME seconds each: the persister's (weft__persist_load,
# then what loaded run and closed), then the whole world's (weft_load of
# saves of tests/save's programs, then 60 frames and weft_close); the
# checksums of each input set right; seeds written by the targets.
fuzz-save: $(FUZZ_NEEDS)
	$(call fuzz_clang,save-corpus,fuzz_persist)
	$(call fuzz_clang,world-corpus,fuzz_save)
	@mkdir -p build-fuzz/save-seeds build-fuzz/world-seeds
	WEFT_FUZZ_SEEDS=build-fuzz/save-seeds build-fuzz/fuzz_persist -max_total_time=$(FUZZ_TIME) \
	  -max_len=16384 -timeout=10 -rss_limit_mb=4096 build-fuzz/save-corpus build-fuzz/save-seeds
	WEFT_FUZZ_SEEDS=build-fuzz/world-seeds build-fuzz/fuzz_save -max_total_time=$(FUZZ_TIME) \
	  -max_len=131072 -timeout=10 -rss_limit_mb=4096 -entropic=0 build-fuzz/world-corpus build-fuzz/world-seeds

# ---- run ----

run: deps $(BUILD)/weft
	@$(MAKE) --no-print-directory demo-run

clean:
	rm -rf build build-asan build-tsan build-bench build-fuzz

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
