-- :checkhealth turnstoned against the real daemon.
local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/../helpers.lua')
local api = vim.api

local model = H.with_daemon()

--- Run :checkhealth turnstoned and return its report.
---@return string
local function checkhealth()
  vim.cmd('checkhealth turnstoned')
  local buf = api.nvim_get_current_buf()
  local text = H.text(buf)
  vim.cmd.bwipeout(buf)
  return text
end

H.test(':checkhealth turnstoned reports OK with a working daemon and model', function()
  local report = checkhealth()
  for _, want in ipairs({
    'OK Neovim 0.', 'OK configuration is valid', 'OK daemon command: ' .. H.daemon,
    'OK daemon started: turnstoned',
    'OK protocol version 1, revision ' .. require('turnstoned.protocol').PROTOCOL_REVISION,
    'OK model configured: scripted', 'OK the model server answers: ' .. model.base_url,
    'OK model/list: the server lists 1 model: scripted (:Turnstoned model switches)',
    'no MCP servers configured', 'OK command sandbox: available',
  }) do
    H.ok(report:find(want, 1, true), ('%q in the report:\n%s'):format(want, report))
  end
  H.ok(not report:find('ERROR', 1, true), 'no error in the report:\n' .. report)
end)

--- Restart the daemon with these MCP servers (a user config: trusted).
---@param servers table
local function with_mcp(servers)
  require('turnstoned').stop()
  local mcp = H.workspace .. '/mcp.json'
  vim.fn.writefile({ vim.json.encode({ mcpServers = servers }) }, mcp)
  local config = vim.g.turnstoned
  config.cmd = { H.daemon, '--mcp-config', mcp }
  vim.g.turnstoned = config
end

H.test(':checkhealth shows the state of each MCP server', function()
  with_mcp({
    everything = { command = H.python, args = { H.repo .. '/tests/mcp_servers/everything.py' } },
    broken = { command = '/nonexistent/server' },
  })
  local client = require('turnstoned.client')
  local state = {}
  client.on(require('turnstoned.protocol').methods.mcp_server_status_changed, function(p)
    state[p.name] = p.status
  end)
  client.start()
  H.wait('both MCP servers to settle', function()
    return state.broken == 'failed' and state.everything == 'connected'
  end, 30000)
  local report = checkhealth()
  H.ok(report:find('ERROR MCP broken', 1, true), 'the failed server is an error:\n' .. report)
  H.ok(report:find('OK MCP everything%s+connected%s+%d+ tools'), 'the connected one is OK:\n' .. report)
end)

H.test(':TurnstonedMcp lists the servers and refreshes the one picked', function()
  local seen = H.stub_select(function(items, labels)
    return labels[1]:find('^Refresh') and 1 or H.find(labels, 'everything')
  end)
  local note = H.notified_by('TurnstonedMcp', 'the refresh to be reported')
  H.eq(#seen, 2, 'the server list, then its actions')
  H.ok(vim.iter(seen[1].labels):any(function(l)
    return l:find('^broken%s+failed') ~= nil
  end), 'the list shows the failed server: ' .. vim.inspect(seen[1].labels))
  H.eq(seen[1].labels[#seen[1].labels], '↻ refresh all', 'the last entry')
  H.ok(note:find('turnstoned: ', 1, true) and not note:find('failed', 1, true), note)
end)

H.test(':TurnstonedLog shows the plugin log and the daemon stderr section', function()
  vim.cmd('TurnstonedLog')
  local text = H.text(api.nvim_get_current_buf())
  H.ok(text:find('INFO  starting the daemon: ' .. H.daemon, 1, true), text)
  H.ok(text:find('daemon ready: turnstoned', 1, true), text)
  H.ok(text:find('# daemon stderr', 1, true), text)
  vim.cmd.close()
end)

--- A loopback port nothing listens on.
---@return integer
local function closed_port()
  local tcp = assert(vim.uv.new_tcp())
  tcp:bind('127.0.0.1', 0)
  local port = tcp:getsockname().port
  tcp:close()
  return port
end

H.test(':checkhealth says when the model server cannot be reached', function()
  require('turnstoned').stop()
  local url = ('http://127.0.0.1:%d/v1'):format(closed_port())
  local config = vim.g.turnstoned
  config.cmd = { H.daemon }
  config.env.OPENAI_BASE_URL = url
  vim.g.turnstoned = config
  local report = checkhealth()
  H.ok(report:find('OK model configured: scripted', 1, true), report)
  H.ok(report:find('ERROR the model server cannot be reached: Cannot reach the model server at ' .. url, 1, true),
    report)
  H.ok(report:find('Start the model server, or fix OPENAI_BASE_URL', 1, true), 'the advice:\n' .. report)
end)

H.test(':checkhealth names a daemon command that is not installed', function()
  require('turnstoned').stop()
  local config = vim.g.turnstoned
  config.cmd = { '/nonexistent/turnstoned' }
  vim.g.turnstoned = config
  local report = checkhealth()
  H.ok(report:find('ERROR daemon command not found: /nonexistent/turnstoned', 1, true), report)
end)

H.run()
