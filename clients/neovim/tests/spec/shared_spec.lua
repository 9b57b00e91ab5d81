-- The resident daemon, shared by default: a bare `turnstoned` command is launched as
-- `turnstoned attach`, a daemon that runs with other settings is said in one line and
-- `:Turnstoned restart` gives it these, and a daemon without `attach` is started on its own.
local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/../helpers.lua')

local install = require('turnstoned.install')
local client = require('turnstoned.client')
local methods = require('turnstoned.protocol').methods

local model = H.model()
local home = H.configure(model, { share_daemon = true })

--- `turnstoned stop` for this spec's home: the resident daemon outlives its clients.
local function stop_resident()
  return vim.system({ H.daemon, 'stop' }, { env = vim.g.turnstoned.env, text = true }):wait(15000)
end

H.cleanup = function()
  client.stop()
  stop_resident()
  model.stop()
end

--- The daemon's health, through the plugin's connection.
---@return table
local function health()
  local err, result = client.request_sync(methods.daemon_health, vim.empty_dict(), 15000)
  H.ok(err == nil, 'daemon/health answered: ' .. vim.inspect(err))
  return assert(result)
end

--- Start the plugin's connection and wait until it is ready.
local function start()
  local failed = H.start_client()
  H.ok(failed == nil, 'the daemon started: ' .. tostring(failed))
end

local notes = H.record_notify

H.test('only the daemon alone is launched as the bridge to the shared one', function()
  H.eq(install.shared({ '/opt/t/bin/turnstoned' }, true), { '/opt/t/bin/turnstoned', 'attach' }, 'bare daemon')
  H.eq(install.shared({ 'turnstoned' }, true), { 'turnstoned', 'attach' }, 'on PATH')
  H.eq(install.shared({ 'turnstoned' }, false), nil, 'sharing off')
  -- Options a running daemon would not take, a subcommand, a wrapper: started as given.
  H.eq(install.shared({ 'turnstoned', '--mcp-config', 'x.json' }, true), nil, 'with options')
  H.eq(install.shared({ 'turnstoned', 'attach' }, true), nil, 'already attach')
  H.eq(install.shared({ '/home/me/bin/run-agent' }, true), nil, 'another program')
end)

H.test('the mismatch line names both models and servers, and nothing when they agree', function()
  local running = { resident = true, model = 'scripted', modelUrl = 'http://127.0.0.1:1/v1' }
  H.eq(client.mismatch(running, 'scripted', 'http://127.0.0.1:1/v1/'), nil, 'same (trailing slash)')
  H.eq(client.mismatch(running, nil, nil), nil, 'these settings name nothing')
  H.eq(client.mismatch({ resident = false, model = 'a' }, 'b', nil), nil, 'a daemon of its own')
  local said = client.mismatch(running, 'other', 'http://10.0.0.2/v1')
  H.ok(said and said:find('uses scripted at http://127.0.0.1:1/v1', 1, true), said)
  H.ok(said:find('settings say other at http://10.0.0.2/v1', 1, true), said)
  H.ok(said:find(':Turnstoned restart', 1, true), said)
  H.eq(client.mismatch({ resident = true, model = 'm', modelUrl = vim.NIL }, nil, 'http://x/v1'),
    'the shared daemon uses m at OpenAI, but your settings say m at http://x/v1 (it was started '
      .. 'with other settings): :Turnstoned restart stops it and starts one with yours, or set '
      .. 'share_daemon = false', 'OpenAI when the daemon names no URL')
end)

H.test('by default the plugin reaches the resident daemon through attach', function()
  H.eq(require('turnstoned.config').get().share_daemon, true, 'the default, set here explicitly')
  local seen = notes()
  start()
  H.ok(client.shared(), 'the connection is to the shared daemon')
  local h = health()
  H.eq(h.resident, true, 'daemon/health resident')
  H.eq(h.model, 'scripted', 'its model')
  H.ok(vim.uv.fs_stat(home .. '/run'), 'its socket lives under TURNSTONED_HOME/run')
  vim.wait(300)
  H.eq(seen, {}, 'nothing to say when the settings agree')
end)

H.test('a shared daemon with other settings is said once, and :Turnstoned restart fixes it', function()
  client.stop()
  -- The running daemon keeps the model it was started with; these settings now name another.
  vim.g.turnstoned = vim.tbl_deep_extend('force', vim.g.turnstoned, { env = { TURNSTONED_MODEL = 'other-model' } })
  local seen = notes()
  start()
  H.wait('the mismatch line', function()
    return #seen > 0
  end)
  H.ok(seen[1]:find('the shared daemon uses scripted at ' .. model.base_url, 1, true), seen[1])
  H.ok(seen[1]:find('your settings say other-model', 1, true), seen[1])
  H.eq(#seen, 1, 'said once')
  vim.cmd('checkhealth turnstoned')
  local report = H.text(vim.api.nvim_get_current_buf())
  vim.cmd.bwipeout()
  H.ok(report:find('ERROR the shared daemon uses scripted', 1, true), ':checkhealth says it:\n' .. report)
  H.ok(report:find("the resident daemon this user's clients share", 1, true), report)
  vim.cmd('Turnstoned restart')
  H.wait('the restart', function()
    return vim.iter(seen):any(function(m)
      return m:find('restarted', 1, true) ~= nil
    end)
  end, 30000, function()
    return vim.inspect(seen)
  end)
  H.ok(client.shared(), 'still shared')
  local h = health()
  H.eq(h.model, 'other-model', 'the new resident daemon took these settings')
  H.eq(h.resident, true, 'resident')
  vim.wait(300)
  H.eq(vim.tbl_filter(function(m)
    return m:find('shared daemon uses', 1, true) ~= nil
  end, seen), { seen[1] }, 'no second mismatch line after the restart')
end)

H.test('the shared daemon stopped under the plugin (turnstoned stop): no error, the next request attaches again', function()
  local seen = notes()
  start()
  local lock = home .. '/run/daemon.lock'
  local before = vim.fn.readfile(lock)[1]
  H.eq(stop_resident().code, 0, 'turnstoned stop')
  H.wait('the bridge to end', function()
    return client.info().state ~= 'ready'
  end, 15000)
  H.eq(client.info().state, 'stopped', 'a clean stop, not a failure')
  local h = health()
  H.eq(h.resident, true, 'attached again')
  H.ok(vim.fn.readfile(lock)[1] ~= before, 'to a new resident daemon')
  H.eq(vim.tbl_filter(function(m)
    return m:find('exited', 1, true) ~= nil
  end, seen), {}, 'nothing said of the stop')
end)

H.test('a daemon without attach starts on its own instead', function()
  client.stop()
  stop_resident()
  -- A daemon that does not know `attach` (an older turnstoned) refuses it and exits.
  local bin = home .. '/old/bin'
  vim.fn.mkdir(bin, 'p')
  local wrapper = bin .. '/turnstoned'
  vim.fn.writefile({
    '#!/bin/sh',
    'if [ "$1" = attach ]; then echo "turnstoned: error: invalid choice: attach" >&2; exit 2; fi',
    'exec ' .. vim.fn.shellescape(H.daemon) .. ' "$@"',
  }, wrapper)
  vim.fn.setfperm(wrapper, 'rwx------')
  vim.g.turnstoned = vim.tbl_extend('force', vim.g.turnstoned, { cmd = { wrapper } })
  start()
  H.ok(not client.shared(), 'a daemon of its own')
  H.eq(health().resident, false, 'daemon/health resident')
  local log = table.concat(vim.fn.readfile(require('turnstoned.log').path()), '\n')
  H.ok(log:find('the shared daemon did not answer', 1, true), 'the log says why' .. H.log_tail())
end)

H.run()
