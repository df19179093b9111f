spawn(function()
  local why = "jammed"
  wait(0.1)
  error("door " .. why)
end)
wait(1)
