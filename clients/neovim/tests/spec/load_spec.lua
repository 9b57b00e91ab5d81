-- Installed the way a plugin manager does it (a start package), with no setup() call.
local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/../helpers.lua')

--- Copy the plugin into a start package under a fresh 'packpath' entry.
---@return string site
local function install()
  local site = vim.fn.tempname()
  local dest = site .. '/pack/plugins/start/turnstoned.nvim'
  vim.fn.mkdir(dest, 'p')
  for _, dir in ipairs({ 'plugin', 'lua', 'doc' }) do
    local out = vim.system({ 'cp', '-R', H.plugin_dir .. '/' .. dir, dest .. '/' .. dir }):wait()
    assert(out.code == 0, out.stderr)
  end
  return site
end

--- Run `script` (Lua) in a new Neovim that has the package; it returns a table, given back.
---@param site string
---@param script string
---@return table
local function in_fresh_nvim(site, script)
  local file = vim.fn.tempname() .. '.lua'
  vim.fn.writefile(vim.split(script, '\n'), file)
  local out = vim.system({ vim.v.progpath, '--clean', '--cmd', 'set packpath^=' .. site, '-l', file },
    { text = true, timeout = 30000 }):wait()
  assert(out.code == 0, ('nvim failed (%d): %s%s'):format(out.code, out.stdout, out.stderr))
  local json = out.stdout:match('RESULT(%b{})')
  assert(json, 'no result in: ' .. out.stdout .. out.stderr)
  return vim.json.decode(json)
end

local site = install()

H.test('the plugin loads without setup() and defines its commands, nothing more', function()
  local facts = in_fresh_nvim(site, [[
    local loaded = {}
    for name in pairs(package.loaded) do
      if name:match('^turnstoned') then loaded[#loaded + 1] = name end
    end
    local commands = {}
    for _, c in ipairs({ 'Turnstoned', 'TurnstonedInterrupt', 'TurnstonedSessions',
                         'TurnstonedMcp', 'TurnstonedLog', 'TurnstonedPreview', 'TurnstonedGrants',
                         'TurnstonedPolicies', 'TurnstonedWatches', 'TurnstonedCompact', 'TurnstonedInstall' }) do
      commands[c] = vim.fn.exists(':' .. c) == 2
    end
    io.stdout:write('RESULT' .. vim.json.encode({
      guard = vim.g.loaded_turnstoned, loaded = loaded, commands = commands,
      range = vim.api.nvim_get_commands({}).Turnstoned.range,
      plug = vim.fn.maparg('<Plug>(TurnstonedSelection)', 'x') ~= '',
    }))
  ]])
  H.eq(facts.guard, true, 'the load guard')
  H.eq(facts.loaded, {}, 'modules loaded at startup')
  for name, exists in pairs(facts.commands) do
    H.ok(exists, ':' .. name .. ' exists')
  end
  H.ok(facts.range ~= nil, ':Turnstoned takes a range')
  H.ok(facts.plug, 'the <Plug> mapping for a selection exists')
end)

H.test(':Turnstoned opens the chat with the defaults, no setup() and no daemon yet', function()
  local facts = in_fresh_nvim(site, [[
    vim.cmd('Turnstoned')
    local chat_win = require('turnstoned.ui').chat_win()
    io.stdout:write('RESULT' .. vim.json.encode({
      wins = #vim.api.nvim_tabpage_list_wins(0),
      chat = chat_win ~= nil,
      ft = chat_win and vim.bo[vim.api.nvim_win_get_buf(chat_win)].filetype,
      prompt_focused = vim.api.nvim_get_current_win() == require('turnstoned.ui').prompt_win(),
      daemon = require('turnstoned.client').info().state,
    }))
  ]])
  H.eq(facts.wins, 3, 'windows: code, chat, prompt')
  H.ok(facts.chat, 'a chat window')
  H.eq(facts.ft, 'markdown', 'the chat filetype')
  H.ok(facts.prompt_focused, 'the cursor is in the prompt')
  H.eq(facts.daemon, 'stopped', 'the daemon starts with the first prompt, not before')
end)

H.test(':help turnstoned and every command has a help tag, with no :helptags run', function()
  local doc = site .. '/pack/plugins/start/turnstoned.nvim/doc'
  local before = vim.fn.readdir(doc)
  local facts = in_fresh_nvim(site, [[
    local found = {}
    for _, tag in ipairs({ 'turnstoned', ':Turnstoned', ':TurnstonedInterrupt', ':TurnstonedSessions',
        ':TurnstonedMcp', ':TurnstonedLog', ':TurnstonedPreview', 'turnstoned-preview', 'turnstoned-config', 'turnstoned-approvals',
        ':TurnstonedGrants', ':TurnstonedPolicies', ':TurnstonedWatches', ':TurnstonedCompact', 'turnstoned-grants',
        'turnstoned-policies', 'turnstoned-watches', 'turnstoned-compaction',
        'turnstoned-review', 'turnstoned-health', 'turnstoned-mcp-trust', 'turnstoned-api', 'turnstoned-transport',
        'turnstoned.setup()', 'turnstoned-install', ':Turnstoned-model', ':Turnstoned-commands',
        ':Turnstoned-image', ':Turnstoned-paste-image', 'turnstoned-prompt', 'turnstoned-mentions',
        'turnstoned-slash', 'turnstoned-pictures', 'turnstoned-models', 'turnstoned-live-plan',
        'turnstoned-keys', ':TurnstonedInstall', 'turnstoned-lazy', ':Turnstoned-mcp', ':Turnstoned-mcp-login',
        ':Turnstoned-mcp-logout', 'turnstoned-mcp-login', ':Turnstoned-restart', 'turnstoned-attach' }) do
      found[tag] = pcall(vim.cmd, 'help ' .. vim.fn.escape(tag, ' '))
        and vim.fn.expand('%:t') == 'turnstoned.txt'
      pcall(vim.cmd, 'helpclose')
    end
    io.stdout:write('RESULT' .. vim.json.encode({ found = found }))
  ]])
  for tag, found in pairs(facts.found) do
    H.ok(found, ':help ' .. tag)
  end
  H.eq(vim.fn.readdir(doc), before, 'nothing is written into the doc directory')
end)

H.test('the committed doc/tags is what :helptags makes of doc/ today', function()
  local copy = vim.fn.tempname()
  vim.fn.mkdir(copy, 'p')
  vim.fn.writefile(vim.fn.readfile(H.plugin_dir .. '/doc/turnstoned.txt', 'b'), copy .. '/turnstoned.txt', 'b')
  local out = vim.system({ vim.v.progpath, '--clean', '--headless', '-c', 'helptags ' .. vim.fn.fnameescape(copy),
    '-c', 'qa!' }, { text = true, timeout = 30000 }):wait()
  H.eq(out.code, 0, 'helptags runs: ' .. (out.stderr or ''))
  H.eq(vim.fn.readfile(H.plugin_dir .. '/doc/tags'), vim.fn.readfile(copy .. '/tags'),
    'doc/tags is up to date (regenerate: cd clients/neovim && nvim --clean --headless -c "helptags doc" -c q)')
  vim.fn.delete(copy, 'rf')
end)

H.test('the help says which Neovim it needs', function()
  local text = table.concat(vim.fn.readfile(H.plugin_dir .. '/doc/turnstoned.txt'), '\n')
  H.ok(text:find('Neovim 0.10', 1, true), 'the requirement is stated')
end)

H.run()
