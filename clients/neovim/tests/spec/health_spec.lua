-- :checkhealth turnstoned against the real daemon.
local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/../helpers.lua')
local api = vim.api

local model = H.model()
H.configure(model)
H.cleanup = function()
  require('turnstoned').stop()
  model.stop()
end

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
    'OK daemon started: turnstoned', 'OK protocol version 1, revision 1.1',
    'OK model configured: scripted', 'no MCP servers configured',
  }) do
    H.ok(report:find(want, 1, true), ('%q in the report:\n%s'):format(want, report))
  end
  H.ok(not report:find('ERROR', 1, true), 'no error in the report:\n' .. report)
end)

H.test(':checkhealth shows the state of each MCP server', function()
  require('turnstoned').stop()
  local config = vim.g.turnstoned
  -- A project config the session's workspace does not matter here: a user config server.
  local mcp = H.workspace .. '/mcp.json'
  vim.fn.writefile({ vim.json.encode({ mcpServers = { broken = { command = '/nonexistent/server' } } }) }, mcp)
  config.cmd = { H.daemon, '--mcp-config', mcp }
  vim.g.turnstoned = config
  local report
  H.wait('the MCP server to fail', function()
    report = checkhealth()
    return report:find('MCP broken%s+failed') ~= nil
  end, 20000)
  H.ok(report:find('ERROR MCP broken', 1, true), 'the failed server is an error:\n' .. report)
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
