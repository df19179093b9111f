-- package.path as test suites and applications set it: templates that
-- name the package's own directories, a '..' that stays inside, and
-- modules whose own requires find their neighbours through that path.
package.path = './lib/?.lua;./lib/?/init.lua;' .. package.path
local alpha, where = require('alpha')
print(alpha.name, where, alpha.file)
print(alpha.beta.name, alpha.beta.file, require('beta') == alpha.beta)
print(alpha.later().name)
local gamma, gwhere = require('gamma')
print(gamma.name, gwhere)
print(package.searchpath('alpha', package.path))
print(package.searchpath('nope', './lib/?.lua;./lib/?/init.lua'))

package.path = './lib/../lib/?.lua;' .. package.path
local delta, dwhere = require('delta')
print(delta.name, dwhere)

package.path = 'lib/?.lua'
print(select(2, require('epsilon')))
local ok, err = pcall(require, 'nope')
print(ok, err:match("^module 'nope' not found:"), err:find("\n\tno file 'lib/nope.lua'", 1, true) ~= nil)
print(pcall(require, 'broken'))

-- a template that leaves the package finds nothing here
package.path = '../?.lua'
ok, err = pcall(require, 'zeta_is_nowhere')
print(ok, err:find("\n\tno file '../zeta_is_nowhere.lua'", 1, true) ~= nil)
