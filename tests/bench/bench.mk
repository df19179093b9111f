# The benchmark suite (included by the top Makefile). `make bench` builds
# into $(BUILD)/bench/ at -O2 and prints the table; `make bench
# BENCH_QUICK=1` is a short smoke run; BENCH_ARGS passes more options to
# weft-bench (e.g. BENCH_ARGS="--only W1,W0 --runs 5"). See README.md.

BENCH_OUT    = $(BUILD)/bench
BENCH_CFLAGS = $(CFLAGS) -O2 $(LUA_CFLAGS) -I bindings

.PHONY: bench-run

bench-run: $(BENCH_OUT)/weft-bench $(BENCH_OUT)/bench-floor $(BENCH_OUT)/reload-latency \
           $(BENCH_OUT)/debug-cost $(BENCH_OUT)/api-cost $(BENCH_OUT)/save-cost
	@$(BENCH_OUT)/weft-bench --dir tests/bench --floor $(BENCH_OUT)/bench-floor \
	  $(if $(BENCH_QUICK),--quick) $(BENCH_ARGS)
	@echo "== hot reload: a file's close to the new code running"
	@$(BENCH_OUT)/reload-latency $(if $(BENCH_QUICK),5,20)
	@echo "== the debugger: W1 with no client, a client and no breakpoint, a breakpoint elsewhere"
	@$(BENCH_OUT)/debug-cost tests/bench 10000 60 $(if $(BENCH_QUICK),60 1,600 5)
	@echo "== engine calls on one growing object: ns per call, first vs last 10^4 of 10^5"
	@$(BENCH_OUT)/api-cost tests/bench $(if $(BENCH_QUICK),20000 1,100000)
	@echo "== the profiler: W1 and W0 with a profile (weft_profile_start) over the timed frames, and without"
	@sh tests/bench/profile_cost.sh $(BENCH_OUT)/weft-bench tests/bench $(if $(BENCH_QUICK),1 60,5 600)
	@echo "== saving the running world: N sleeping tasks saved (weft_save) and loaded (weft_load)"
	@$(BENCH_OUT)/save-cost $(if $(BENCH_QUICK),1 0 1000 10000,5)

$(BENCH_OUT)/api-cost: tests/bench/api_cost.c $(MIALLOC_OBJ) $(BUILD)/libweft.a
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) $(LDFLAGS) -o $@ $< $(MIALLOC_OBJ) $(BUILD)/libweft.a $(LUA_LIBS) -lm -lpthread -ldl

$(BENCH_OUT)/debug-cost: tests/bench/debug_cost.c $(MIALLOC_OBJ) $(BUILD)/libweft.a
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) $(LDFLAGS) -iquote bindings -o $@ $< $(MIALLOC_OBJ) $(BUILD)/libweft.a $(LUA_LIBS) -lm -lpthread -ldl

$(BENCH_OUT)/save-cost: tests/bench/save_cost.c $(MIALLOC_OBJ) $(BUILD)/libweft.a
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) $(LDFLAGS) -o $@ $< $(MIALLOC_OBJ) $(BUILD)/libweft.a $(LUA_LIBS) -lm -lpthread -ldl

# Real files, the real watcher, frames paced at 60 Hz.
$(BENCH_OUT)/reload-latency: tests/bench/reload_latency.c $(MIALLOC_OBJ) $(BUILD)/libweft.a
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) $(LDFLAGS) -o $@ $< $(MIALLOC_OBJ) $(BUILD)/libweft.a $(LUA_LIBS) -lm -lpthread -ldl

$(BENCH_OUT)/weft-bench: tests/bench/bench.c $(MIALLOC_OBJ) $(BUILD)/libweft.a
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) $(LDFLAGS) -o $@ $< $(MIALLOC_OBJ) $(BUILD)/libweft.a $(LUA_LIBS) -lm -lpthread -ldl

# The floor links Lua alone (the same build of it): no weft code in it.
$(BENCH_OUT)/bench-floor: tests/bench/floor.c $(LUA_OUT)/liblua.a
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) $(LDFLAGS) -o $@ $< $(LUA_OUT)/liblua.a -lm
