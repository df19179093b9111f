/* Saving a graph of Lua values to bytes and loading it into another
   state: tables, closures and their shared upvalues, userdata, and
   coroutines suspended mid-yield at any depth, which continue after the
   load as if they had never stopped. The foundation of saving a running
   world; docs/save.md describes what is saved and the format.

   What cannot be written is matched by name: C functions, light
   userdata, the main thread, the continuations of suspended C frames,
   and any table or userdata the caller names. Both states build a names
   set giving the same names to their own objects:

     weft__persist_names(L);             -- pushes an empty set
     weft__persist_name_lua(L, -1);      -- Lua's libraries, the main thread
     weft__persist_name(L, -1, "world", idx);
     if (weft__persist_save(L, -1, root) == LUA_OK) ... the save on top

   and the loading state the same, then weft__persist_load. A save and a
   load never leave a partial result: either the whole graph or a
   message naming what could not be written (its path from the root:
   "root.tasks[12].locals.door: a userdata without a saver") or why the
   bytes are refused ("bad save: ...").

   Every function here takes stack indices of L, allocates through L's
   allocator (all of it Lua objects: an error or a refusal leaves nothing
   to free) and may raise a memory error where noted. */
#ifndef WEFT_PERSIST_H
#define WEFT_PERSIST_H

#include <stddef.h>

#include <lua.h>

/* Pushes a new, empty names set (a table: keep it as long as the
   state saves or loads). May raise (memory). */
void weft__persist_names(lua_State *L);

/* Names the value at idx in the set at names: a table, a userdata, a
   function (a C function: the function pointer, so every C closure of
   it is written with its upvalues and loaded over the other state's
   function of that name; a Lua function: matched as an object), a light
   userdata or a thread. Named objects are not written: a save refers to
   them by name and a load puts the loading set's value of that name in
   their place. A name given again is taken by the new value. Raises on
   another type of value (strings, numbers and booleans are written as
   they are) and on memory errors. */
void weft__persist_name(lua_State *L, int names, const char *name, int idx);

/* Names a continuation (lua_KFunction), as a suspended C frame holds it
   (lua_yieldk, lua_callk, lua_pcallk). A frame's context (lua_KContext)
   is written as an integer: a continuation must not take it for a
   pointer. May raise (memory). */
void weft__persist_name_k(lua_State *L, int names, const char *name, lua_KFunction k);

/* Names the table at idx (prefix, or nothing when prefix is "") and,
   breadth first, every table, userdata, C function and light userdata
   reachable from it through string keys, by its path ("string.format"
   under prefix "string"); a value reachable by two paths gets the
   shorter (the first in byte order among equals), and on the loading
   side both names find it. Names already in the set are kept. May raise
   (memory). */
void weft__persist_name_tree(lua_State *L, int names, int idx, const char *prefix);

/* Names what Lua's own libraries give, as luaL_openlibs opens them: each
   library table in package.loaded and what it holds (name_tree; for _G,
   "_G" and its C functions only: the other tables a script sets in _G
   are saved), the C functions the libraries hand out without keeping
   them in a table ("lua.ipairsaux", "lua.auxwrap" of coroutine.wrap,
   "lua.codes" and "lua.codeslax" of utf8.codes), the main thread
   ("lua.main"), the registry ("lua.registry"), the strings' metatable
   ("lua.stringmt"), and the
   continuations of pcall and xpcall ("lua.pcallk"), of pairs with a
   __pairs ("lua.pairsk") and of dofile ("lua.dofilek"; named only where
   the null device reads as an empty file), found by suspending each
   once in a scratch coroutine. A load checks the frames of these three
   as it knows their functions. Call it on both sides with the libraries
   as luaL_openlibs left them. May raise (memory). */
void weft__persist_name_lua(lua_State *L, int names);

/* How a userdata type is saved, chosen by the userdata's metatable.
   Both functions are called with the userdata on top of L's stack and
   its memory at block (size bytes). save pushes one value that stands
   for the userdata (a string of bytes, a table, any value a save can
   write: it is saved with the graph). load finds that value, loaded,
   pushed above the userdata and fills the block (zeroed before), after
   every object of the graph is built and before any metatable is set;
   it leaves the stack as it found it. Either may raise to fail the save
   or the load. */
typedef struct weft__persist_saver {
  void (*save)(lua_State *L, void *block, size_t size, void *ud);
  void (*load)(lua_State *L, void *block, size_t size, void *ud);
  void *ud;    /* given to both */
  size_t size; /* the block's size a load accepts; 0: any up to 1 MiB */
} weft__persist_saver;

/* Gives userdata whose metatable is the table at mt the saver type
   (copied), or, with type NULL, saves them "plain": their bytes as they
   are. Their user values and metatable are saved as well. The metatable
   is named name (weft__persist_name): the loading state registers its
   own metatable of the type under the same name. May raise (memory). */
void weft__persist_type(lua_State *L, int names, const char *name, int mt,
                        const weft__persist_saver *type);

/* Gives the text chunk was compiled from (its chunk name, as load and
   luaL_loadbuffer were given it: "@scripts/ai/patrol.lua"). A save
   writes a Lua function as the text of its chunk and its place in it,
   and a load compiles the text again, so it never runs code it did not
   compile itself. A chunk loaded from a string without a name
   (luaL_loadstring, load(s)) has its text for a name and needs none.
   May raise (memory). */
void weft__persist_source(lua_State *L, int names, const char *chunk, const char *text, size_t len);

/* As weft__persist_source, for a chunk both sides have: the program's
   own, embedded in it. The loading side registers the same chunk with
   its own text. A save writes a string that is this text (the chunk's,
   and any value equal to it) as the chunk's name, the text's length and
   its CRC-32, not the text; a load takes the loading side's text and
   refuses the save when its length or CRC differ ("chunk =[weft
   prelude]: this build's text differs from the save's"). A script's
   file is not shared: its save keeps its text, which the file on disk
   may no longer have. May raise (memory). */
void weft__persist_shared(lua_State *L, int names, const char *chunk, const char *text, size_t len);

/* Saves the value at root, with everything it reaches, using the names
   set at names. Returns LUA_OK and pushes the save (a string), or
   returns LUA_ERRRUN (LUA_ERRMEM) and pushes the message: the path of a
   value that cannot be written and why, e.g. "root.f.<upvalue g>: C
   function 0x55d0c2a4 has no name", "root.co: a running coroutine".
   The collector is stopped while it runs; no Lua code runs but the
   savers'. */
int weft__persist_save(lua_State *L, int names, int root);

/* Loads a save (len bytes at data, which the caller keeps) into L's
   state, matching names with the set at names. Returns LUA_OK and
   pushes the root value, or returns LUA_ERRRUN (LUA_ERRMEM) and pushes
   the message ("bad save: ...", or a name the set lacks); nothing built
   is left reachable then. Every field is checked before it is used; no
   input crashes it. The collector is stopped while it runs; no Lua code
   runs but the type loaders'. */
int weft__persist_load(lua_State *L, int names, const void *data, size_t len);

#endif
