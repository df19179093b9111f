-- What a designer writes against the engine's verb.
print("knocking at frame " .. frame())
local state = wait(open_door())
print("the door is " .. state .. " at frame " .. frame())
wait(0.5)
print("walked through at frame " .. frame())
