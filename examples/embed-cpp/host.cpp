// An engine in C++17 embedding weft through the plain C header: the
// state owned by a std::unique_ptr, the engine's allocator and logger
// as member functions behind C callbacks, a verb that returns a future
// the engine completes later, and a signal the engine fires.
// Build: c++ -std=c++17 host.cpp $(pkg-config --cflags --libs weft)
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <weft.h> // C linkage for weft and for Lua's lua.h (weft.h says extern "C")

namespace {

// The engine's own allocator: counts what weft holds.
struct Heap {
  size_t live = 0;
  static void *alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
    auto *h = static_cast<Heap *>(ud);
    if (nsize == 0) {
      if (ptr) h->live -= osize;
      std::free(ptr);
      return nullptr;
    }
    void *p = std::realloc(ptr, nsize);
    if (p) h->live += nsize - (ptr ? osize : 0);
    return p;
  }
};

// A door the engine opens over a few frames; scripts wait on its future.
struct Door {
  weft_future opened;
  int frames_left;
};

struct Engine {
  Heap heap;
  std::unique_ptr<weft_state, decltype(&weft_close)> W{nullptr, &weft_close};
  std::vector<Door> doors;
  weft_signal bell{};
  std::vector<std::string> said;

  bool open(const char *scripts) {
    weft_desc d = WEFT_DESC_INIT;  // every field its default, the size set
    d.scripts_root = scripts;
    d.alloc = &Heap::alloc;
    d.alloc_ud = &heap;
    d.log = [](void *user, const char *line, size_t len) {
      static_cast<Engine *>(user)->said.emplace_back(line, len);
      std::printf("script: %.*s\n", static_cast<int>(len), line);
    };
    d.user = this;
    W.reset(weft_open(&d));
    if (!W) return false;
    bell = weft_signal_new(W.get());
    lua_State *L = weft_lua(W.get());
    weft_push_api(W.get());
    lua_pushlightuserdata(L, this);
    lua_pushcclosure(L, &Engine::l_open_door, 1);
    lua_setfield(L, -2, "open_door");
    weft_push_signal(W.get(), L, bell);
    lua_setfield(L, -2, "bell");
    lua_pop(L, 1);
    return true;
  }

  // open_door(frames) -> a future resolved with "open" that many frames later.
  static int l_open_door(lua_State *L) {
    auto *e = static_cast<Engine *>(lua_touserdata(L, lua_upvalueindex(1)));
    int frames = static_cast<int>(lua_tointeger(L, 1));
    weft_future f = weft_future_new(e->W.get());
    e->doors.push_back({f, frames > 0 ? frames : 1});
    weft_push_future(e->W.get(), L, f);
    return 1;
  }

  // The engine's side of a frame: doors that finish opening complete
  // their futures; the bell rings at frame 3.
  void update(int frame) {
    for (auto &[f, left] : doors) {
      if (f.id && --left == 0) {
        lua_pushstring(weft_lua(W.get()), "open");
        weft_future_resolve(W.get(), f, 1);
        f.id = 0;
      }
    }
    if (frame == 3) {
      lua_pushinteger(weft_lua(W.get()), frame);
      weft_signal_fire(W.get(), bell, 1);
    }
  }
};

std::optional<std::string> run(Engine &e, const char *file) {
  weft_task task;
  const char *err = nullptr;
  if (weft_run_file(e.W.get(), file, &task, &err) != WEFT_OK) return std::string(err);
  for (int frame = 0; frame < 600 && weft_task_result(e.W.get(), task) == WEFT_RUNNING; frame++) {
    e.update(frame);
    weft_step(e.W.get(), 1.0 / 60);
  }
  std::optional<std::string> failed;
  if (weft_task_result(e.W.get(), task) != WEFT_DONE) failed = weft_task_error(e.W.get(), task);
  weft_task_drop(e.W.get(), task);
  return failed;
}

} // namespace

int main(int argc, char **argv) {
  Engine e;
  if (!e.open(".")) return 1;
  auto failed = run(e, argc > 1 ? argv[1] : "main.lua");
  weft_signal_drop(e.W.get(), e.bell);
  int leaked = weft_close(e.W.release());
  std::printf("weft %s from C++: script %s, %zu lines, %zu bytes live after close\n", weft_version_string(),
              failed ? failed->c_str() : "done", e.said.size(), e.heap.live);
  return !failed && leaked == 0 && e.heap.live == 0 ? 0 : 1;
}
