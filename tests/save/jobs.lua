-- Jobs in flight at the save: awaited, their results delivered at the
-- save (as the next frame would), so the saved and the loaded run go on
-- with their futures complete.
local grid = {"......", ".####.", "......", ".#..#.", "......"}
for i = 1, 3 do
  spawn(function()
    for k = 1, 4 do
      local text = wait(job("read_file", "castle.level"))
      local path = wait(job("find_path", grid, 1, 1, 6, 5))
      print("task", i, k, #text, path and #path, frame())
      wait(0.05 * i)
    end
  end)
end
wait(1.5)
print("end", frame())
