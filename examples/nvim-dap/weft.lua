-- nvim-dap: attach to weft's debugger (weft run FILE --debug 4711, or
-- weft-demo --debug 4711). Put this in your config, or :luafile it.
local dap = require("dap")
dap.adapters.weft = { type = "server", host = "127.0.0.1", port = 4711 }
dap.configurations.lua = {
  { type = "weft", request = "attach", name = "Attach to weft (port 4711)" },
}
