# Lua 5.4 as weft links it (included by the top Makefile): Debian's own
# source package (apt-get source lua5.4, fetched once into build/src),
# compiled as Debian compiles it (LUA_COMPAT_5_3; Debian's luaconf.h
# reads the machine's multiarch name from lua5.4-deb-multiarch.h, which
# liblua5.4-dev would bring and mk/lua/multiarch.sh writes) with weft's
# changes (mk/lua/edit.sh, mk/lua/weft_luai.h): the VM's stop check, so a
# watchdog stops a runaway script without touching the Lua state from
# its thread; the counted budget's count in the VM's loop; a spawn site
# kept in each function prototype; and the collector's extra roots, the
# threads weft keeps only in its tasks' slots. libweft.a and libweft.so
# carry these objects; programs and embedders get Lua's API from them,
# with the headers installed beside weft.h. Lua's internal headers (for saving a running world) are in
# $(LUA_OUT)/src.

LUA_SRC_DIR := build/src
LUA_OUT      = $(BUILD)/lua
LUA_CORE    := lapi lcode lctype ldebug ldo ldump lfunc lgc llex lmem lobject lopcodes lparser \
               lstate lstring ltable ltm lundump lvm lzio lauxlib lbaselib lcorolib ldblib liolib \
               lmathlib loadlib loslib lstrlib ltablib lutf8lib linit
LUA_HEADERS := lua.h luaconf.h lualib.h lauxlib.h lua5.4-deb-multiarch.h lua.hpp
# The string hash seed is fixed (Lua 5.4.4 makes it from an address and
# the time, lstate.c's luai_makeseed): a table keyed by strings then lays
# out, and pairs walks it, in the same order on every run and machine,
# and a saved table (bindings/base/persist.c) keeps its order when it is
# loaded into another state. A random seed's guard, against keys made to
# collide, matters less here: collisions only slow a table down, and a
# script's time is budgeted. The cross and web builds compile Lua with
# their own flags (mk/cross.mk, mk/windows.mk, mk/web.mk) and this seed,
# and the fuzz targets with it too. Lua's objects depend on this file
# for its flags.
LUA_SEED     := '-Dluai_makeseed(L)=0x77656674u'
# Sanitizer builds instrument Lua too (SAN_CFLAGS: the Makefile's).
LUA_BUILD_CFLAGS = -std=gnu11 -g $(OPT) -DLUA_COMPAT_5_3 -DLUA_USE_POSIX $(LUA_SEED) -iquote mk/lua $(SAN_CFLAGS)
LUA_OBJ      = $(LUA_CORE:%=$(LUA_OUT)/obj/%.o) $(LUA_OUT)/obj/weft_luai.o
LUA_PIC_OBJ  = $(LUA_CORE:%=$(LUA_OUT)/pic/%.o) $(LUA_OUT)/pic/weft_luai.o
LUA_HDR      = $(LUA_OUT)/include/.done

DEPS += cmd:dpkg-source:dpkg-dev

$(LUA_SRC_DIR)/.fetched:
	@echo "fetching Debian's Lua 5.4 source (apt-get source lua5.4) into $(LUA_SRC_DIR)"
	@sh mk/debian-src.sh $(LUA_SRC_DIR) lua5.4
	@touch $@

# Debian's files, lvm.c with the stop check.
$(LUA_OUT)/src/.done: $(LUA_SRC_DIR)/.fetched mk/lua/edit.sh mk/lua/multiarch.sh
	@rm -rf $(LUA_OUT)/src && mkdir -p $(LUA_OUT)/src
	@cp $(LUA_SRC_DIR)/lua5.4-*/src/*.[ch] $(LUA_OUT)/src/
	@sh mk/lua/edit.sh $(LUA_SRC_DIR)/lua5.4-*/src/lvm.c $(LUA_OUT)/src/lvm.c
	@sh mk/lua/multiarch.sh $(CC) > $(LUA_OUT)/src/lua5.4-deb-multiarch.h
	@touch $@

$(LUA_HDR): $(LUA_OUT)/src/.done
	@mkdir -p $(dir $@)
	@cp $(filter %.h,$(LUA_HEADERS:%=$(LUA_OUT)/src/%)) $(dir $@)
	@touch $@

# Lua's own C++ wrapper of its headers (extern "C"), installed with them.
$(LUA_OUT)/include/lua.hpp: $(LUA_SRC_DIR)/.fetched
	@mkdir -p $(dir $@)
	@cp $(LUA_SRC_DIR)/lua5.4-*/src/lua.hpp $@

$(LUA_OUT)/obj/weft_luai.o $(LUA_OUT)/pic/weft_luai.o: mk/lua/weft_luai.c mk/lua/weft_luai.h $(LUA_OUT)/src/.done
	@mkdir -p $(dir $@)
	$(CC) $(LUA_BUILD_CFLAGS) -iquote $(LUA_OUT)/src $(if $(findstring /pic/,$@),-fPIC) -c $< -o $@

$(LUA_OUT)/obj/%.o: $(LUA_OUT)/src/.done mk/lua/weft_luai.h mk/lua.mk
	@mkdir -p $(dir $@)
	$(CC) $(LUA_BUILD_CFLAGS) -c $(LUA_OUT)/src/$*.c -o $@

$(LUA_OUT)/pic/%.o: $(LUA_OUT)/src/.done mk/lua/weft_luai.h mk/lua.mk
	@mkdir -p $(dir $@)
	$(CC) $(LUA_BUILD_CFLAGS) -fPIC -c $(LUA_OUT)/src/$*.c -o $@

# Lua alone (the benchmark floor links it, with no weft code).
$(LUA_OUT)/liblua.a: $(LUA_OBJ)
	@rm -f $@
	ar rcs $@ $^
