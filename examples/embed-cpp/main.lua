-- What a designer writes against the C++ engine's verb and signal.
print("knocking at frame " .. frame())
local rang = spawn(function() return wait(bell) end)
local state = wait(open_door(2))
print("the door is " .. state .. " at frame " .. frame())
print("the bell rang at engine frame " .. wait(rang))
