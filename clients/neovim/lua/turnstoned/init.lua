--- turnstoned for Neovim: the Lua API behind the commands. `setup()` is optional.
local M = {}

local api = vim.api
local wired = false

local function highlights()
  local links = {
    TurnstonedOk = 'DiagnosticOk',
    TurnstonedError = 'DiagnosticError',
    TurnstonedWarn = 'DiagnosticWarn',
    TurnstonedApproval = 'DiagnosticWarn',
    TurnstonedRunning = 'DiagnosticInfo',
    TurnstonedPending = 'Comment',
    TurnstonedWorking = 'Comment',
  }
  for name, target in pairs(links) do
    api.nvim_set_hl(0, name, { link = target, default = true })
  end
end

--- Subscribe to the daemon and set up highlights and autocommands: once, on first use of
--- any entry point below.
local function wire()
  if wired then
    return
  end
  wired = true
  highlights()
  require('turnstoned.session').wire()
  require('turnstoned.approval').wire()
  require('turnstoned.elicit').wire()
  require('turnstoned.mcp').wire()
  require('turnstoned.trust').wire()
  require('turnstoned.client').on_exit(require('turnstoned.questions').clear)
  require('turnstoned.editor').serve()
  require('turnstoned.reload').wire()
  require('turnstoned.models').wire()
  -- A prompt that is a slash command's built-in runs it instead of being sent.
  require('turnstoned.ui').on_send = require('turnstoned.slash').send
  local group = api.nvim_create_augroup('turnstoned', { clear = true })
  require('turnstoned.editor').wire(group)
  api.nvim_create_autocmd('ColorScheme', { group = group, callback = highlights })
  api.nvim_create_autocmd('BufWinEnter', {
    group = group,
    pattern = 'turnstoned://chat/*',
    callback = function()
      require('turnstoned.ui').decorate(api.nvim_get_current_win())
    end,
  })
  api.nvim_create_autocmd('VimLeavePre', {
    group = group,
    callback = function()
      require('turnstoned.client').stop(1000)
    end,
  })
end

--- Set options (they win over `vim.g.turnstoned`). Not needed: defaults work.
---@param opts? table see |turnstoned-config|
function M.setup(opts)
  require('turnstoned.config').set(opts)
end

--- Open the chat, or focus its prompt if it is open.
---@param opts? {focus?: boolean}
---@return turnstoned.Chat
function M.open(opts)
  wire()
  local chat = require('turnstoned.session').current()
  require('turnstoned.ui').show(chat, { focus = not opts or opts.focus ~= false })
  return chat
end

--- Send a prompt in the current chat (opened without taking the cursor). A slash command's
--- built-in (`/compact`) runs instead.
---@param prompt string
function M.ask(prompt)
  assert(type(prompt) == 'string', 'turnstoned.ask: prompt must be a string')
  M.open({ focus = false })
  require('turnstoned.slash').send(prompt)
end

--- A selection as the model should read it: path (relative to the session's directory
--- when inside it), line range, code.
---@param buf integer
---@param first integer 1-based
---@param last integer 1-based, inclusive
---@return string[]
function M.selection_lines(buf, first, last)
  local name = api.nvim_buf_get_name(buf)
  local path = ('[buffer %d]'):format(buf)
  if name ~= '' then
    local root = require('turnstoned.session').cwd()
    path = vim.fs.normalize(vim.fn.fnamemodify(name, ':p'))
    path = vim.startswith(path, root .. '/') and path:sub(#root + 2) or path
  end
  local range = first == last and ('line %d'):format(first) or ('lines %d-%d'):format(first, last)
  local out = { ('`%s`, %s:'):format(path, range), '', '```' .. (vim.bo[buf].filetype or '') }
  vim.list_extend(out, api.nvim_buf_get_lines(buf, first - 1, last, false))
  out[#out + 1] = '```'
  return out
end

--- Send lines of a buffer with their path and line range. With a prompt it is sent at
--- once; without, the prompt window gets the selection for you to add the question.
---@param opts {buf?: integer, line1: integer, line2: integer, prompt?: string}
function M.send_selection(opts)
  local buf = opts.buf or api.nvim_get_current_buf()
  wire()
  require('turnstoned.editor').remember_selection(buf, opts.line1, opts.line2)
  local lines = M.selection_lines(buf, opts.line1, opts.line2)
  if opts.prompt and opts.prompt ~= '' then
    return M.ask(table.concat(lines, '\n') .. '\n\n' .. opts.prompt)
  end
  M.open({ focus = true })
  vim.list_extend(lines, { '', '' })
  require('turnstoned.ui').prefill(lines)
  vim.cmd.startinsert()
end

--- Interrupt the current chat's running turn.
---@return boolean interrupted whether a turn was running
function M.interrupt()
  wire()
  return require('turnstoned.session').interrupt()
end

--- Pick a session to resume (its history is redrawn) or start a new one.
function M.sessions()
  wire()
  require('turnstoned.pickers').sessions()
end

--- Resume a session by id and show it.
---@param session_id string
---@param cb? fun(err?: string, chat?: turnstoned.Chat)
function M.resume(session_id, cb)
  wire()
  require('turnstoned.session').resume(session_id, function(err, chat)
    if chat then
      require('turnstoned.ui').show(chat, { focus = true, at_end = true })
    elseif err then
      vim.notify('turnstoned: cannot resume: ' .. err, vim.log.levels.ERROR)
    end
    return cb and cb(err, chat)
  end)
end

--- Start over: the next prompt opens a new session.
function M.new_session()
  wire()
  require('turnstoned.ui').show(require('turnstoned.session').new(), { focus = true })
end

--- MCP servers and their state; refresh one or all, trust or revoke a project's config.
function M.mcp()
  wire()
  require('turnstoned.pickers').mcp()
end

--- Log in to MCP server `name` (OAuth: the login page opens in your browser); without a
--- name, pick one (those needing a login first). It runs in the background.
---@param name? string
function M.mcp_login(name)
  wire()
  require('turnstoned.mcp').login(name)
end

--- Forget MCP server `name`'s login (its OAuth tokens); without a name, pick a logged-in one.
---@param name? string
function M.mcp_logout(name)
  wire()
  require('turnstoned.mcp').logout(name)
end

--- The current session's grants (what runs without asking); revoke one.
function M.grants()
  wire()
  require('turnstoned.permissions').grants()
end

--- The tool policies of the current session; trust or revoke the workspace's policies file.
function M.policies()
  wire()
  require('turnstoned.permissions').policies()
end

--- The running watches; cancel one.
function M.watches()
  wire()
  require('turnstoned.pickers').watches()
end

--- Compact the current chat's context now: older messages give way to a summary.
function M.compact()
  wire()
  require('turnstoned.actions').compact()
end

--- Show a preview the model opened in the current chat (pick one when there are several).
function M.preview()
  wire()
  require('turnstoned.preview').pick(require('turnstoned.session').peek())
end

--- Install the daemon into the plugin's private environment (`:TurnstonedInstall`).
---@param cb? fun(err?: string, daemon?: string)
function M.install(cb)
  require('turnstoned.install').install(nil, cb)
end

--- Show the plugin's log and the daemon's stderr.
function M.log()
  local daemon = require('turnstoned.install').daemon()
  require('turnstoned.log').show((daemon.cmd or { 'turnstoned' })[1])
end

--- A statusline component: the current chat's approval mode, model, state and usage (''
--- before the chat has a session).
---@return string
function M.status()
  local chat = package.loaded['turnstoned.session'] and require('turnstoned.session').peek()
  if not chat or not chat.sid then
    return ''
  end
  local state, usage, mode, model = require('turnstoned.ui').describe(chat)
  return 'turnstoned ' .. (mode ~= '' and (mode .. ' · ') or '') .. (model ~= '' and (model .. ' · ') or '')
    .. state .. (usage ~= '' and (' · ' .. usage) or '')
end

--- Set the current chat's approval mode; without `mode`, pick one (`vim.ui.select`).
--- Before the chat has a session, it is the mode the session starts in.
---@param mode? turnstoned.ApprovalMode
function M.mode(mode)
  wire()
  require('turnstoned.actions').mode(mode)
end

--- Switch the current chat to model `name` (and remember it for new sessions in its
--- workspace); without `name`, pick one of what the model server lists (`model/list`).
---@param name? string
function M.model(name)
  wire()
  require('turnstoned.models').pick(name)
end

--- Pick a slash command of the current chat's session (`session/commands`).
function M.commands()
  wire()
  require('turnstoned.slash').pick()
end

--- Attach an image file to the current chat's next prompt.
---@param path? string
---@return boolean attached
function M.image(path)
  wire()
  return require('turnstoned.images').attach(path or '')
end

--- Attach the clipboard's picture to the current chat's next prompt (wl-paste or xclip).
---@param cb? fun(attached: boolean)
function M.paste_image(cb)
  wire()
  require('turnstoned.images').paste(cb)
end

--- Review what the current chat's last turn changed: a list of its files, with keys to see
--- a file's diff, keep it, or undo that file.
function M.changes()
  wire()
  require('turnstoned.changes').list()
end

--- Undo the current chat's last turn that changed files (asks whether the conversation
--- goes back too, and about files you changed since).
function M.undo()
  wire()
  require('turnstoned.changes').undo()
end

--- Take back the current chat's last undo.
function M.redo()
  wire()
  require('turnstoned.changes').redo()
end

--- Send an earlier prompt again, edited: pick it, rewind the chat or fork it from before
--- that prompt, and edit the prompt in the prompt window.
function M.rerun()
  wire()
  require('turnstoned.changes').rerun()
end

--- The words after `:Turnstoned` that run a subcommand rather than being sent, and the
--- function each runs.
local SUBCOMMANDS = { 'changes', 'commands', 'image', 'mcp', 'mode', 'model', 'paste-image', 'redo', 'rerun', 'restart', 'undo' }
local RUNS = { ['paste-image'] = 'paste_image' }
--- What `:Turnstoned mcp` takes: an action, then a server's name.
local MCP_ACTIONS = { login = 'mcp_login', logout = 'mcp_logout' }

--- A subcommand named by the command's words, and its argument: `mode` takes a mode name,
--- `model` a model name, `image` a path, `mcp` `login` or `logout` and a server's name; the
--- others nothing (anything else is a prompt).
---@param words string[]
---@return string? run the function of this module it runs, string? argument
local function subcommand(words)
  local name = words[1]
  if not vim.tbl_contains(SUBCOMMANDS, name) then
    return nil
  end
  if #words == 1 then
    return RUNS[name] or name
  elseif name == 'mcp' then
    local run = MCP_ACTIONS[words[2]]
    if run and #words <= 3 then
      return run, words[3]
    end
  elseif #words == 2 and (name == 'model' or name == 'image'
      or name == 'mode' and vim.tbl_contains(require('turnstoned.config').MODES, words[2])) then
    return name, words[2]
  end
end

--- Completion of `:Turnstoned`: the subcommands, the modes after `mode`, `login` and `logout`
--- after `mcp`, then the servers (as last heard: those needing a login, or logged in).
---@param lead string
---@param line string
---@return string[]
function M.complete(lead, line)
  local words = vim.split(vim.trim(line:gsub('^%S+', '', 1)), '%s+', { trimempty = true })
  local before = #words - (lead ~= '' and 1 or 0)
  local options
  if before == 0 then
    options = SUBCOMMANDS
  elseif before == 1 and words[1] == 'mode' then
    options = require('turnstoned.config').MODES
  elseif before == 1 and words[1] == 'image' then
    return vim.fn.getcompletion(lead, 'file')
  elseif before == 1 and words[1] == 'mcp' then
    options = vim.tbl_keys(MCP_ACTIONS)
    table.sort(options)
  elseif before == 2 and words[1] == 'mcp' and MCP_ACTIONS[words[2]] then
    options = require('turnstoned.mcp').names(words[2])
  else
    return {}
  end
  return vim.tbl_filter(function(o)
    return vim.startswith(o, lead)
  end, options)
end

--- Stop the daemon (the next command starts it again).
function M.stop()
  require('turnstoned.client').stop()
end

--- `:Turnstoned restart`: stop the daemon and start it again with the current settings. The
--- shared daemon is stopped for every client (`turnstoned stop`): it keeps the settings of
--- whoever started it, so this is how it takes yours.
function M.restart()
  local client = require('turnstoned.client')
  local was_shared = client.shared() and client.info().state == 'ready'
  client.stop()
  local function start()
    client.start(function(err)
      if err then
        vim.notify('turnstoned: the daemon did not start: ' .. err, vim.log.levels.ERROR)
      else
        vim.notify('turnstoned: the daemon restarted', vim.log.levels.INFO)
      end
    end)
  end
  local daemon = require('turnstoned.install').daemon()
  if not was_shared or not daemon.found then
    return start()
  end
  local env = require('turnstoned.config').get().env
  vim.system({ daemon.cmd[1], 'stop' }, { env = env, text = true }, vim.schedule_wrap(function(out)
    local log = require('turnstoned.log')
    log.info('turnstoned stop: code %d %s', out.code, vim.trim((out.stdout or '') .. (out.stderr or '')))
    start()
  end))
end

--- `:Turnstoned [prompt]`, with a range: the selection too.
---@param o table the user command's arguments
function M.command(o)
  if o.range > 0 then
    return M.send_selection({ line1 = o.line1, line2 = o.line2, prompt = o.args })
  end
  local run, argument = subcommand(o.fargs or vim.split(o.args, '%s+', { trimempty = true }))
  if run then
    return M[run](argument)
  elseif o.args ~= '' then
    return M.ask(o.args)
  end
  M.open()
  -- Ready to type, at the end of what the prompt holds.
  local win = require('turnstoned.ui').prompt_win()
  if win and win == api.nvim_get_current_win() then
    local buf = api.nvim_win_get_buf(win)
    api.nvim_win_set_cursor(win, { api.nvim_buf_line_count(buf), 0 })
    vim.cmd.startinsert({ bang = true })
  end
end

return M
