-- screenshot() draws and saves the frame as it is at the call: F1 pressed
-- between two calls shows in the second picture only (run.sh compares
-- them), and a screenshot() as the script's last statement is written;
-- a screenshot into a directory that does not exist makes it.
local check = require("lib.check")
local out = "build/demo-test/"

check.skip_intro()
check.expect(not overlay_shown("tasks"), "F1 is off")
screenshot(out .. "at_call_without_f1.png")
tap("f1")
screenshot(out .. "at_call_with_f1.png")
tap("f1")
wait()
screenshot(out .. "new/dir/made.png")   -- the directory is made
screenshot(out .. "at_call_last.png")
