-- turnstoned: guard and commands only; everything else loads on first use.
if vim.g.loaded_turnstoned then
  return
end
vim.g.loaded_turnstoned = true

if vim.fn.has('nvim-0.10') == 0 then
  vim.api.nvim_echo({ { 'turnstoned needs Neovim 0.10 or newer', 'WarningMsg' } }, true, {})
  return
end

local function api()
  return require('turnstoned')
end

local command = vim.api.nvim_create_user_command

command('Turnstoned', function(o)
  api().command(o)
end, {
  nargs = '*',
  range = true,
  complete = function(lead, line)
    return api().complete(lead, line)
  end,
  desc = 'turnstoned: open the chat; with text, send it; with a range, send those lines; '
    .. 'mode, model, commands, image, paste-image, changes, undo, redo, rerun, restart, mcp [login|logout]',
})
command('TurnstonedInterrupt', function()
  api().interrupt()
end, { desc = 'turnstoned: interrupt the running turn' })
command('TurnstonedSessions', function()
  api().sessions()
end, { desc = 'turnstoned: pick a session to resume' })
command('TurnstonedMcp', function()
  api().mcp()
end, { desc = 'turnstoned: MCP servers and their state' })
command('TurnstonedGrants', function()
  api().grants()
end, { desc = 'turnstoned: what the session lets run without asking; revoke a grant' })
command('TurnstonedPolicies', function()
  api().policies()
end, { desc = "turnstoned: the session's tool policies; trust the workspace's policies file" })
command('TurnstonedWatches', function()
  api().watches()
end, { desc = 'turnstoned: the running watches; cancel one' })
command('TurnstonedCompact', function()
  api().compact()
end, { desc = "turnstoned: summarise the older part of the chat's context now" })
command('TurnstonedPreview', function()
  api().preview()
end, { desc = 'turnstoned: show a preview the model opened' })
command('TurnstonedInstall', function()
  api().install()
end, { desc = 'turnstoned: install the daemon into a private virtual environment' })
command('TurnstonedLog', function()
  api().log()
end, { desc = "turnstoned: the plugin's log and the daemon's stderr" })

vim.keymap.set('x', '<Plug>(TurnstonedSelection)', ':Turnstoned<CR>', {
  silent = true,
  desc = 'turnstoned: send the selection with its path and line range',
})
