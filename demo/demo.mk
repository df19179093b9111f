# The SDL2 demo game (included by the top Makefile).
#   make demo-run    build and start the game in a window, hot reload on
#   make test-demo   build and run the end-to-end tests headless
#   make demo-art    repaint assets/*.png with the art generator

DEPS += pc:sdl2:libsdl2-dev pc:SDL2_ttf:libsdl2-ttf-dev pc:SDL2_image:libsdl2-image-dev \
        file:/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf:fonts-dejavu-core \
        cmd:xvfb-run:xvfb cmd:xdotool:xdotool cmd:luacheck:lua-check

DEMO_CFLAGS = -I bindings -iquote cli $(shell pkg-config --cflags sdl2 SDL2_ttf SDL2_image)
DEMO_LIBS   = $(shell pkg-config --libs sdl2 SDL2_ttf SDL2_image)
DEMO_SRC    := $(filter-out demo/artgen.c,$(wildcard demo/*.c))
DEMO_OBJ    := $(DEMO_SRC:%.c=$(BUILD)/%.o)
DOCS_NEEDS  += $(BUILD)/weft-demo

.PHONY: demo-run test-demo demo-art

$(BUILD)/demo/%.o: demo/%.c | $(LUA_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LUA_CFLAGS) $(DEMO_CFLAGS) -c $< -o $@

$(BUILD)/weft-demo: $(DEMO_OBJ) $(MIALLOC_OBJ) $(BUILD)/libweft.a
	$(CC) $(LDFLAGS) -o $@ $(DEMO_OBJ) $(MIALLOC_OBJ) $(BUILD)/libweft.a $(LUA_LIBS) $(DEMO_LIBS) -lm -lpthread -ldl

$(BUILD)/weft-pngstat: tests/demo/pngstat.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DEMO_CFLAGS) $(LDFLAGS) -o $@ $< $(DEMO_LIBS) -lm

$(BUILD)/weft-artgen: $(BUILD)/demo/artgen.o
	$(CC) $(LDFLAGS) -o $@ $^ $(DEMO_LIBS) -lm

demo-run: $(BUILD)/weft-demo
	$(BUILD)/weft-demo --watch

test-demo: $(BUILD)/weft-demo $(BUILD)/weft-pngstat $(BUILD)/weft
	@echo "== end-to-end demo tests (headless)"
	@sh tests/demo/run.sh $(BUILD)/weft-demo $(BUILD)/weft-pngstat
	@echo "== record and replay (end to end)"
	@sh tests/demo/replay.sh $(BUILD)/weft-demo
	@echo "== quicksave, quickload and rewind (end to end)"
	@sh tests/demo/save.sh $(BUILD)/weft-demo $(BUILD)/weft-pngstat

demo-art: $(BUILD)/weft-artgen
	$(BUILD)/weft-artgen assets
