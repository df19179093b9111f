-- A module not found: Lua's message, with a line for each of Lua's two C
-- searchers over package.cpath ("no file ''" for an empty one; none
-- loads a file in weft), and the four searchers' own answers.
package.path = './?.lua;./?/init.lua'
package.cpath = ''
print(#package.searchers)
for i, s in ipairs(package.searchers) do print(i, s('no.such')) end
print(select(2, pcall(require, 'no.such')))
package.cpath = './?.so;./lib?.so'
print(select(2, pcall(require, 'a.b')))
print(select(2, pcall(require, 'nodots')))
package.cpath = 3
print(select(2, pcall(require, 'x')))
package.cpath = {}
print(pcall(require, 'x'))
