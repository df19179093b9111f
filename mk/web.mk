# weft in the browser (included by the top Makefile): the library, the
# weft program and the demo built to WebAssembly with Debian's emscripten,
# on the platform without threads (host/plat_nothreads.c: jobs inline,
# counted budgets, no watcher: the page hands saved scripts to
# weft_reload_file).
#   make web        build-web/: index.html, weft-demo.{js,wasm,data}, the playground
#   make serve-web  serves build-web/ on http://localhost:$(WEB_PORT)
#   make test-web   weft test and the demo's headless tests under node, then
#                   the page in headless Chromium (tests/web/)
#
# Lua (with weft's stop check), cJSON, SDL2, SDL2_image (PNG through its
# stb_image, saving through its miniz), SDL2_ttf and FreeType are built
# from Debian's source packages (mk/debian-src.sh, as mk/cross.mk does)
# into build-web/deps/, kept between runs. The playground's editor
# (CodeMirror 6 with its Lua mode), its bundler (esbuild) and the tests'
# browser driver (puppeteer-core) come from npm into build-web/node/,
# pinned, and are bundled at build time: none of it is in the tree.
#
# Two quirks of emscripten 3.1.6 with a node that is not Debian's own:
# its optimiser loads acorn, which Debian ships under /usr/share/nodejs
# (NODE_PATH); and node >= 18 has fetch(), which its loader then uses for
# the .wasm file and fails on a path: programs run under node are built
# for node alone (-sENVIRONMENT=node), whose loader reads the file.

WEB        := build-web
WEB_PORT   ?= 8080
# WEB_LOOP=asyncify builds the page's loop on -sASYNCIFY instead of
# emscripten_set_main_loop, into build-web/asyncify/ (to measure both).
WEB_LOOP   ?= mainloop
WEB_DEPS   := cmd:emcc:emscripten file:/usr/share/nodejs/acorn:node-acorn cmd:cmake:cmake \
              cmd:ninja:ninja-build cmd:dpkg-source:dpkg-dev cmd:xxd:xxd cmd:chromium:chromium \
              cmd:node:nodejs cmd:npm:npm cmd:python3:python3
WEB_PKGS   := lua5.4 cjson libsdl2 libsdl2-image libsdl2-ttf freetype
WEB_ENV    := NODE_PATH=/usr/share/nodejs
EMCC       := $(WEB_ENV) emcc
EMAR       := $(WEB_ENV) emar
D          := $(WEB)/deps

# clang's -Wunneeded-internal-declaration: helpers used by assertions alone.
WEB_BASE   := -std=c11 -D_POSIX_C_SOURCE=200809L -g0 -O2 $(WARN) -Wno-unneeded-internal-declaration -MMD -MP \
              -iquote host -DWEFT_PLAT_NOTHREADS
WEB_INC    := -I$(D)/include
WEB_OBJ    := $(HOST_SRC:%.c=$(WEB)/%.o) $(BINDINGS_SRC:%.c=$(WEB)/%.o)
WEB_DEPLIB := $(D)/lib/liblua.a $(D)/lib/libcjson.a
WEB_SDL    := $(D)/lib/libSDL2.a $(D)/lib/libSDL2_image.a $(D)/lib/libSDL2_ttf.a $(D)/lib/libfreetype.a
# Lua's C stack: deep recursion tests reach 200 C levels.
WEB_LINK   := -O2 -sALLOW_MEMORY_GROWTH=1 -sTOTAL_STACK=4194304
# Under node: the real file system (NODERAWFS), the exit code kept.
WEB_NODE   := $(WEB_LINK) -sENVIRONMENT=node -sNODERAWFS=1 -sEXIT_RUNTIME=1 --pre-js mk/web/nofetch.js
# The fonts the demo looks for, at the same paths in the page's files.
WEB_FONTS  := $(foreach f,DejaVuSans DejaVuSans-Bold DejaVuSansMono,/usr/share/fonts/truetype/dejavu/$(f).ttf)
WEB_PAGE_LOOP := $(if $(filter asyncify,$(WEB_LOOP)),-sASYNCIFY=1 -sASYNCIFY_STACK_SIZE=65536,)
WEB_PAGE_DIR  := $(if $(filter asyncify,$(WEB_LOOP)),$(WEB)/asyncify,$(WEB))
WEB_PAGE   := $(WEB_LINK) -sENVIRONMENT=web -sEXIT_RUNTIME=1 -sFORCE_FILESYSTEM=1 \
              -sEXPORTED_FUNCTIONS=_main,_web_reload,_web_drawn -sEXPORTED_RUNTIME_METHODS=FS,ENV,ccall \
              --preload-file scripts@/scripts --preload-file assets@/assets \
              $(foreach f,$(WEB_FONTS),--preload-file $(f)@$(f))
WEB_DEMO_C := -Wno-format-zero-length -I bindings -iquote cli -I$(D)/include/SDL2 $(if $(filter asyncify,$(WEB_LOOP)),-DWEFT_WEB_ASYNCIFY)

# npm packages: the editor, its bundler, the tests' browser driver.
WEB_NPM    := codemirror@6.0.2 @codemirror/legacy-modes@6.5.5 @codemirror/language@6.13.1 \
              @codemirror/state@6.7.6 @codemirror/view@6.43.15 esbuild@0.28.2 puppeteer-core@25.16.0

.PHONY: web web-build serve-web test-web bench-web

web: deps
	@$(MAKE) --no-print-directory deps DEPS="$(WEB_DEPS)"
	@start=$$(date +%s); $(MAKE) --no-print-directory web-build && \
	  echo "web: built in $$(($$(date +%s) - start)) s: $(WEB_PAGE_DIR)/index.html"; \
	  ls -l $(WEB_PAGE_DIR)/weft-demo.wasm $(WEB_PAGE_DIR)/weft-demo.data | awk '{print "  " $$5 " bytes  " $$9}'

web-build: $(WEB_PAGE_DIR)/index.html $(WEB_PAGE_DIR)/weft-demo.js $(WEB_PAGE_DIR)/playground.js \
           $(WEB)/weft.js $(WEB)/weft-demo-node.js

# Serves the page on localhost only (python3's http.server knows .wasm).
serve-web: web
	@echo "serving $(WEB_PAGE_DIR) on http://localhost:$(WEB_PORT)/ (Ctrl-C stops)"
	cd $(WEB_PAGE_DIR) && python3 -m http.server --bind 127.0.0.1 $(WEB_PORT)

test-web: web $(BUILD)/weft-demo
	@echo "== under node: weft test tests/lua scripts, the demo's headless tests (tests/web/node.sh)"
	@sh tests/web/node.sh $(WEB) $(BUILD)
	@echo "== the page in headless Chromium (tests/web/page_test.js)"
	@WEB=$(WEB_PAGE_DIR) NODE_PATH=$(WEB)/node/node_modules node --test tests/web/page_test.js

# W1 (tasks that sleep) and W0 (every task every frame) of tests/bench at
# 10,000 tasks, one measurement each, natively and under node: seconds
# and ns per resume (weft-bench's "one" mode; its suite forks, which
# the web cannot).
WEB_BENCH := "W1 10000 60 400" "W0 10000 10 180"
bench-web: web $(BENCH_OUT)/weft-bench $(WEB)/weft-bench.js
	@for w in $(WEB_BENCH); do for kind in weft weft-cnt; do \
	  n=$$($(BENCH_OUT)/weft-bench one $$kind tests/bench $$w); \
	  j=$$(node $(WEB)/weft-bench.js one $$kind tests/bench $$w); \
	  echo "$$w $$kind" "$$n" "$$j" | awk '{ split($$6, a, "="); split($$8, b, "="); split($$19, c, "="); \
	    printf "%-3s %-8s native %6.0f ns/resume   node %6.0f ns/resume   (x%.1f)\n", $$1, $$5, \
	    1e9 * a[2] / b[2], 1e9 * c[2] / b[2], c[2] / a[2] }'; done; done

$(WEB)/bench.o: tests/bench/bench.c | $(WEB_DEPLIB)
	$(EMCC) $(WEB_BASE) $(WEB_INC) -I bindings -iquote cli -c $< -o $@

$(WEB)/weft-bench.js: $(WEB)/bench.o $(WEB)/cli/mialloc.o $(WEB)/libweft.a $(WEB_DEPLIB) mk/web/nofetch.js
	$(EMCC) $(WEB_NODE) -o $@ $(filter %.o %.a,$^)

# ---- Debian's sources, built once ----

$(WEB)/src/.fetched:
	sh mk/debian-src.sh $(WEB)/src $(WEB_PKGS)
	@touch $@

# Lua as Debian builds it (LUA_COMPAT_5_3, LUA_USE_POSIX), with weft's stop
# check and string hash seed (mk/lua.mk).
$(D)/lib/liblua.a: $(WEB)/src/.fetched mk/lua.mk mk/lua/edit.sh mk/lua/multiarch.sh mk/lua/weft_luai.c mk/lua/weft_luai.h
	@rm -rf $(D)/lua && mkdir -p $(D)/lua/src $(D)/lib $(D)/include
	@echo "building Lua for the web from $$(ls -d $(WEB)/src/lua5.4-*/)"
	@cp $(WEB)/src/lua5.4-*/src/*.[ch] $(D)/lua/src/
	@sh mk/lua/edit.sh $(WEB)/src/lua5.4-*/src/lvm.c $(D)/lua/src/lvm.c
	@cp mk/lua/weft_luai.c $(D)/lua/src/
	@sh mk/lua/multiarch.sh emcc > $(D)/lua/src/lua5.4-deb-multiarch.h
	@cd $(D)/lua && ls src/*.c | grep -v '/luac\?\.c$$' | \
	  $(WEB_ENV) xargs -P 2 -n 8 emcc -std=gnu11 -O2 -DLUA_COMPAT_5_3 -DLUA_USE_POSIX $(LUA_SEED) -iquote $(CURDIR)/mk/lua -c
	$(EMAR) rcs $@ $(D)/lua/*.o
	cp $(D)/lua/src/lua.h $(D)/lua/src/luaconf.h $(D)/lua/src/lualib.h $(D)/lua/src/lauxlib.h \
	  $(D)/lua/src/lua5.4-deb-multiarch.h $(D)/include/

$(D)/lib/libcjson.a: $(WEB)/src/.fetched
	@mkdir -p $(D)/lib $(D)/include/cjson
	$(EMCC) -O2 -c $(WEB)/src/cjson-*/cJSON.c -o $(D)/cJSON.o
	$(EMAR) rcs $@ $(D)/cJSON.o
	cp $(WEB)/src/cjson-*/cJSON.h $(D)/include/cjson/

# SDL2 with its emscripten video, audio and events (no threads: the
# emscripten default).
$(D)/lib/libSDL2.a: $(WEB)/src/.fetched
	@echo "building SDL2 for the web from $$(ls -d $(WEB)/src/libsdl2-2*/) (log: $(D)/sdl2.log)"
	@$(WEB_ENV) emcmake cmake -S $$(ls -d $(WEB)/src/libsdl2-2*/) -B $(D)/sdl2 -G Ninja \
	  -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=$(CURDIR)/$(D) -DSDL_SHARED=OFF -DSDL_STATIC=ON \
	  -DSDL_TEST=OFF > $(D)/sdl2.log 2>&1 && \
	$(WEB_ENV) cmake --build $(D)/sdl2 --target install >> $(D)/sdl2.log 2>&1 || { tail -30 $(D)/sdl2.log; exit 1; }

$(D)/lib/libfreetype.a: $(WEB)/src/.fetched
	@echo "building FreeType for the web (log: $(D)/freetype.log)"
	@$(WEB_ENV) emcmake cmake -S $$(ls -d $(WEB)/src/freetype-*/) -B $(D)/freetype -G Ninja \
	  -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=$(CURDIR)/$(D) -DBUILD_SHARED_LIBS=OFF \
	  -DFT_DISABLE_ZLIB=ON -DFT_DISABLE_BZIP2=ON -DFT_DISABLE_PNG=ON -DFT_DISABLE_HARFBUZZ=ON \
	  -DFT_DISABLE_BROTLI=ON > $(D)/freetype.log 2>&1 && \
	$(WEB_ENV) cmake --build $(D)/freetype --target install >> $(D)/freetype.log 2>&1 || { tail -30 $(D)/freetype.log; exit 1; }

# SDL2_ttf is one file over FreeType.
$(D)/lib/libSDL2_ttf.a: $(D)/lib/libSDL2.a $(D)/lib/libfreetype.a
	$(EMCC) -O2 -I$(D)/include/SDL2 -I$(D)/include/freetype2 -c $(WEB)/src/libsdl2-ttf-*/SDL_ttf.c -o $(D)/SDL_ttf.o
	$(EMAR) rcs $@ $(D)/SDL_ttf.o
	cp $(WEB)/src/libsdl2-ttf-*/SDL_ttf.h $(D)/include/SDL2/

# SDL2_image: PNG only (the demo's assets), decoded by its stb_image,
# saved by its miniz: no libpng or zlib to build.
# The other formats' files give their stubs (IMG_LoadJPG_RW: "not built").
WEB_IMG_SRC := IMG IMG_png IMG_stb IMG_bmp IMG_avif IMG_gif IMG_jpg IMG_jxl IMG_lbm IMG_pcx IMG_pnm IMG_qoi \
               IMG_svg IMG_tga IMG_tif IMG_webp IMG_xcf IMG_xpm IMG_xv IMG_xxx
$(D)/lib/libSDL2_image.a: $(D)/lib/libSDL2.a
	@mkdir -p $(D)/img
	for f in $(WEB_IMG_SRC); do \
	  $(EMCC) -O2 -DLOAD_PNG -DLOAD_BMP -DUSE_STBIMAGE -DSDL_IMAGE_SAVE_PNG=1 -I$(D)/include/SDL2 \
	    -c $(WEB)/src/libsdl2-image-*/$$f.c -o $(D)/img/$$f.o || exit 1; done
	$(EMAR) rcs $@ $(D)/img/*.o
	cp $(WEB)/src/libsdl2-image-*/SDL_image.h $(D)/include/SDL2/

# ---- weft ----

# host/ stays plain C here too: no Lua, no cJSON on its include path.
$(WEB)/host/%.o: host/%.c
	@mkdir -p $(dir $@)
	$(EMCC) $(WEB_BASE) $(LIB_CFLAGS) -c $< -o $@

# The embedded Lua parts are the native build's xxd output ($(BUILD)/gen).
$(WEB)/bindings/%.o: bindings/%.c | $(WEB_DEPLIB) $(LUA_GEN)
	@mkdir -p $(dir $@)
	$(EMCC) $(WEB_BASE) $(LIB_CFLAGS) -iquote $(BUILD)/gen -iquote mk/lua $(WEB_INC) -c $< -o $@

$(WEB)/cli/%.o: cli/%.c | $(WEB_DEPLIB)
	@mkdir -p $(dir $@)
	$(EMCC) $(WEB_BASE) $(WEB_INC) -I bindings -c $< -o $@

$(WEB)/libweft.a: $(WEB_OBJ)
	@rm -f $@
	$(EMAR) rcs $@ $^

$(WEB)/weft.js: $(WEB)/cli/main.o $(WEB)/cli/mialloc.o $(WEB)/libweft.a $(WEB_DEPLIB) mk/web/nofetch.js
	$(EMCC) $(WEB_NODE) -o $@ $(filter %.o %.a,$^)

# ---- the demo ----

$(WEB)/demo/%.o: demo/%.c $(WEB_SDL) | $(WEB_DEPLIB)
	@mkdir -p $(dir $@)
	$(EMCC) $(WEB_BASE) $(WEB_INC) $(WEB_DEMO_C) -c $< -o $@

$(WEB)/asyncify/demo/%.o: demo/%.c $(WEB_SDL) | $(WEB_DEPLIB)
	@mkdir -p $(dir $@)
	$(EMCC) $(WEB_BASE) $(WEB_INC) $(WEB_DEMO_C) -c $< -o $@

WEB_DEMO_OBJ  = $(DEMO_SRC:%.c=$(WEB_PAGE_DIR)/%.o) $(WEB)/cli/mialloc.o
WEB_DEMO_LIBS = $(WEB)/libweft.a $(WEB_SDL) $(WEB_DEPLIB)

# For the tests under node: headless only, the real files.
$(WEB)/weft-demo-node.js: $(DEMO_SRC:%.c=$(WEB)/%.o) $(WEB)/cli/mialloc.o $(WEB_DEMO_LIBS) mk/web/nofetch.js
	$(EMCC) $(WEB_NODE) -o $@ $(filter %.o %.a,$^)

# The page's: its files preloaded (scripts/, assets/, the fonts) into
# weft-demo.data.
$(WEB_PAGE_DIR)/weft-demo.js: $(WEB_DEMO_OBJ) $(WEB_DEMO_LIBS) $(shell find scripts assets -type f 2>/dev/null)
	$(EMCC) $(WEB_PAGE) $(WEB_PAGE_LOOP) -o $@ $(WEB_DEMO_OBJ) $(WEB_DEMO_LIBS)

$(WEB_PAGE_DIR)/index.html: demo/web/index.html
	@mkdir -p $(dir $@)
	cp $< $@

# ---- the playground ----

$(WEB)/node/installed:
	@mkdir -p $(dir $@)
	@echo '{"private": true}' > $(dir $@)package.json
	cd $(dir $@) && npm install --no-audit --no-fund --silent $(WEB_NPM)
	@touch $@

$(WEB_PAGE_DIR)/playground.js: demo/web/playground.js $(WEB)/node/installed
	@mkdir -p $(dir $@)
	NODE_PATH=$(CURDIR)/$(WEB)/node/node_modules $(WEB)/node/node_modules/.bin/esbuild demo/web/playground.js \
	  --bundle --minify --format=iife --outfile=$@ --log-level=warning

-include $(shell find $(WEB) -name '*.d' -not -path '$(WEB)/deps/*' -not -path '$(WEB)/src/*' -not -path '$(WEB)/node/*' 2>/dev/null)
