-- The console (backtick): a line of Lua runs as a task in the game while
-- it goes on; its values or error print below; lines share globals; a
-- line may wait; Up brings the last line back; Tab completes global names;
-- play(name) plays a cinematic.
local check = require("lib.check")
local cinema = require("lib.cinema")

local function last() local l = console_lines() return l[#l] end
local function run(line)
  console_input(line)
  tap("return")
  wait()
  return last()
end

check.skip_intro()
tap("`")
wait()
check.expect(overlay_rects().console, "the console is open")
local hero = player():position()
hold("right", 0.5)
wait(0.6)
check.expect(check.dist(hero, player():position()) < 0.01, "keys type into the console, Wren stays")

check.expect(run("1 + 2") == "3", "1 + 2 prints 3: " .. last())
check.expect(run("entity('gate_guard').name, player().kind") == "gate_guard\thero", "values, tab-separated: " .. last())
run("x = 41")
check.expect(run("x + 1") == "42", "lines share their globals: " .. last())
check.expect(run("nope()"):find("^error: console:1: attempt to call a nil value %(global 'nope'%)"), "an error prints: " .. last())
check.expect(run("1 +"):find("console:1:"), "a syntax error prints: " .. last())
console_input("wait(0.5) return 'later'")
tap("return")
wait(0.2)
check.expect(last() == "> wait(0.5) return 'later'", "a line that waits runs while the game goes on")
wait(0.5)
check.expect(last() == "later", "and prints when it ends: " .. last())

tap("up")
wait()
tap("return")
wait(0.8)
check.expect(last() == "later", "Up brings the last line back")

console_input("entit")
tap("tab")
wait()
check.expect(last():find("entities") and last():find("entity"), "Tab lists the candidates: " .. last())
console_input("y(\"sage\").name")
tap("return")
wait()
check.expect(last() == "sage", "Tab kept \"entit\" to type on: " .. last())
console_input("wef")
tap("tab")
console_input(".modu")
tap("tab")
console_input("()[1].name")
tap("return")
wait()
check.expect(last() == "> weft.modules()[1].name" or console_lines()[#console_lines() - 1] == "> weft.modules()[1].name",
  "Tab completed weft.modules: " .. table.concat(console_lines(), " | "))

check.expect(run("play('cinematics.sage')") == "playing cinematics.sage", "play() starts a cinematic")
check.within(2, "it plays", function() return cinema.state.current == "cinematics.sage" end)
screenshot("build/demo-test/console.png")
tap("`")
wait()
check.expect(not overlay_rects().console, "the backtick closes it")
tap("escape")
check.within(2, "the cinematic is skipped", function() return cinema.state.current == nil end)
wait(1)
check.expect(cinema.state.current == nil, "its zone does not play it again")

-- play(name, beat): from the beat, as --beat does
tap("`")
check.expect(run("play('cinematics.vault', 'door opens')") == "playing cinematics.vault from door opens",
  "play() from a beat: " .. last())
tap("`")
wait_until(function() return cinema.state.current == "cinematics.vault" end)
wait_until(function() return not game_state().fast_forward end)
check.expect(game_state().beat == "door opens" and cinema.state.current == "cinematics.vault",
  "the vault cinematic shown from its beat (" .. game_state().beat .. ")")

-- what the game says shows in the scrollback too: print, warn, weft's
-- own warnings; a line killed as a runaway prints its error here
tap("`")
run('print("hello", 42)')
local lines = console_lines()
check.expect(lines[#lines - 1] == "hello\t42", "print's line is in the scrollback: " .. lines[#lines - 1])
run('warn("@on") warn("careful")')
lines = console_lines()
check.expect(lines[#lines - 1] == "warn: careful (console:1)", "warn's too: " .. lines[#lines - 1])
spawn(function() print("from a brain") end)
wait()
check.expect(last() == "from a brain", "and what any script prints: " .. last())
console_input("while true do end")
tap("return")
check.within(5, "a runaway line is stopped, its error in the console", function()
  return last():find("^error: console:1: .*too long")
end)
screenshot("build/demo-test/console_output.png")
tap("`")
