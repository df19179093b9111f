local m = require "mod"
for i = 1, 100000 do
  m.tick(i)
  wait(0.05)
end
