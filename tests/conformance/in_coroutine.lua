-- lua5.4 side of the conformance runner's coroutine mode: runs the case
-- file given as argument inside a coroutine, as weft's driver does.
local f = assert(loadfile(arg[1]))
coroutine.wrap(f)()
