-- An old-style module: it fills package.loaded itself and returns nothing.
local M = {kind = 'legacy'}
package.loaded[...] = M
