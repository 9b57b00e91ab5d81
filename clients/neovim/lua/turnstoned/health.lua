--- `:checkhealth turnstoned`: Neovim, the daemon, the protocol, the model and what
--- `model/list` finds, MCP servers.
local M = {}

local health = vim.health
local TIMEOUT_MS = 15000

local function check_neovim()
  local v = vim.version()
  local version = ('%d.%d.%d'):format(v.major, v.minor, v.patch)
  if vim.fn.has('nvim-0.10') == 1 then
    health.ok('Neovim ' .. version .. ' (0.10 or newer is required)')
  else
    health.error('Neovim ' .. version .. ': turnstoned needs 0.10 or newer')
  end
  if not jit then
    health.warn('Neovim is built without LuaJIT: an approval request cannot wait for your '
      .. 'answer and is denied')
  end
end

---@return boolean
local function check_command()
  local install = require('turnstoned.install')
  local daemon = require('turnstoned.install').daemon()
  if daemon.from == 'missing' then
    health.error('the daemon is not installed: no `turnstoned` on $PATH, no vim.g.turnstoned.cmd, '
      .. 'none in ' .. install.venv(), {
      ':TurnstonedInstall installs it into ' .. install.venv() .. ' (Python 3.11 or newer)',
      'or install it yourself (pipx install /path/to/turnstoned) so `turnstoned` is on $PATH,',
      "or set vim.g.turnstoned = { cmd = { '/path/to/turnstoned' } }",
    })
    return false
  end
  if not daemon.found then
    health.error(('daemon command not found: %s (vim.g.turnstoned.cmd)'):format(daemon.cmd[1]), {
      'Fix vim.g.turnstoned.cmd (or the cmd given to setup()),',
      'or remove it and run :TurnstonedInstall',
    })
    return false
  end
  local where = { configured = 'configured', path = 'on $PATH', venv = ':TurnstonedInstall' }
  health.ok(('daemon command: %s (%s, %s)'):format(table.concat(daemon.cmd, ' '),
    vim.fn.exepath(daemon.cmd[1]), where[daemon.from]))
  return true
end

---@return boolean
local function check_start()
  local client = require('turnstoned.client')
  local err
  local done = false
  client.start(function(e)
    err, done = e, true
  end)
  if not vim.wait(TIMEOUT_MS, function()
    return done
  end, 20) then
    health.error(('the daemon did not answer `initialize` within %d s'):format(TIMEOUT_MS / 1000),
      { 'See :TurnstonedLog' })
    return false
  end
  if err then
    health.error('the daemon does not start: ' .. err, { 'See :TurnstonedLog' })
    return false
  end
  local info = client.info()
  local server = info.server_info or {}
  health.ok(('daemon started: %s %s, %s'):format(server.name or '?', server.version or '?',
    client.shared() and 'the resident daemon this user\'s clients share (turnstoned attach)'
      or 'a daemon of this Neovim\'s own'))
  local P = require('turnstoned.protocol')
  local ours = P.PROTOCOL_VERSION
  if info.protocol_version == ours then
    health.ok(('protocol version %s, revision %s (the plugin is built for %s)'):format(ours,
      info.protocol_revision, P.PROTOCOL_REVISION))
    if not client.has_revision(P.PROTOCOL_REVISION) then
      health.warn('the daemon is older than the plugin: what later revisions added (diff review, '
        .. 'previews, watches, compaction, verdicts and edits, the model probe) may be missing',
        { 'Update turnstoned' })
    end
  elseif info.protocol_version == nil then
    health.error('the daemon does not announce a turnstoned protocol version')
  else
    health.warn(('protocol version: daemon %s, plugin %s'):format(info.protocol_version, ours),
      { 'Update the plugin and the daemon together' })
  end
  return true
end

---@param result turnstoned.DaemonHealthResult
local function check_model(result)
  local client = require('turnstoned.client')
  local differs = client.mismatch(result, client.wanted_model())
  if differs then
    health.error(differs)
  end
  if result.configError then
    health.error('configuration: ' .. result.configError)
  end
  if result.model then
    health.ok('model configured: ' .. result.model)
  else
    health.error('no model configured', {
      'Set OPENAI_BASE_URL (and TURNSTONED_MODEL), or [model] in ~/.config/turnstone/config.toml',
    })
  end
  local url = result.modelUrl or '?'
  local problem = type(result.modelError) == 'string' and result.modelError or nil
  if result.modelReachable == true and not problem then
    health.ok('the model server answers: ' .. url)
  elseif result.modelReachable == true then
    health.warn(('the model server at %s answered with an error: %s'):format(url, problem),
      { 'Check the API key (OPENAI_API_KEY, or [model] api_key_env) and the model name' })
  elseif result.modelReachable == false then
    health.error(('the model server cannot be reached: %s'):format(problem or url), {
      'Start the model server, or fix OPENAI_BASE_URL ([model] base_url in config.toml)',
    })
  elseif result.model then
    health.info('this daemon does not say whether the model server answers (it needs protocol 1.6); '
      .. 'a turn that cannot reach it ends with upstreamUnavailable')
  end
end

--- What `model/list` finds: the configured server's models, or (none configured) the
--- models local servers serve; and the model remembered for this workspace.
local function check_models()
  local client = require('turnstoned.client')
  if not client.has_revision('1.13') then
    return health.info('this daemon does not list models (it needs protocol 1.13)')
  end
  local methods = require('turnstoned.protocol').methods
  local err, listed = client.request_sync(methods.model_list, nil, TIMEOUT_MS)
  if err or not listed then
    return health.warn('model/list failed: ' .. (err and err.message or '?'))
  end
  ---@cast listed turnstoned.ModelListResult
  local models = listed.models or {}
  local function names(limit)
    local out = {}
    for i, m in ipairs(models) do
      if i > limit then
        out[#out + 1] = ('and %d more'):format(#models - limit)
        break
      end
      out[#out + 1] = m.name .. (m.server ~= 'configured' and (' on ' .. m.server .. ' (' .. m.baseUrl .. ')') or '')
    end
    return table.concat(out, ', ')
  end
  if listed.configured then
    if listed.error then
      health.warn('model/list: the model server could not say what it serves: ' .. listed.error)
    else
      health.ok(('model/list: the server lists %d model%s: %s (:Turnstoned model switches)'):format(#models,
        #models == 1 and '' or 's', names(8)))
    end
  elseif #models > 0 then
    health.warn('no model is configured; local servers serve: ' .. names(8), {
      ':Turnstoned model picks one and saves it to the daemon\'s config.toml',
    })
  else
    health.error('no model is configured, and no local server answers (Ollama on port 11434, '
      .. 'llama.cpp on 8080, vLLM on 8000, LM Studio on 1234)', {
      'Set [model] name (and base_url) in ~/.config/turnstone/config.toml, or start a local server',
      'See :help turnstoned-models',
    })
  end
  local session = require('turnstoned.session')
  local cwd = session.cwd()
  local remembered = session.workspace_model(cwd)
  if remembered then
    health.info(('new sessions in %s start with the model %s (chosen with :Turnstoned model)'):format(
      vim.fn.fnamemodify(cwd, ':~'), remembered))
  end
end

---@param sandbox? turnstoned.SandboxHealth
local function check_sandbox(sandbox)
  if type(sandbox) ~= 'table' then
    return health.info('this daemon does not report a command sandbox (it needs protocol 1.9)')
  end
  local detail = type(sandbox.detail) == 'string' and sandbox.detail ~= '' and sandbox.detail or nil
  if sandbox.available then
    health.ok('command sandbox: available' .. (detail and (' (' .. detail .. ')') or ''))
  else
    health.warn('no command sandbox' .. (detail and (': ' .. detail) or ''), {
      'In auto mode commands then ask as in read-only mode (:Turnstoned mode)',
    })
  end
end

---@param servers turnstoned.McpServerInfo[]
local function check_mcp(servers)
  if #servers == 0 then
    health.info('no MCP servers configured')
    return
  end
  local mcp = require('turnstoned.mcp')
  mcp.remember(servers)
  for _, s in ipairs(servers) do
    local line = 'MCP ' .. mcp.label(s)
    if s.needsAuth then
      health.warn(line, { mcp.login_hint(s.name) .. ' logs in (your browser opens the login page); '
        .. 'the daemon does not retry it until then' })
    elseif s.status == 'connected' then
      health.ok(line)
    elseif s.status == 'failed' then
      health.error(line, { 'Try :TurnstonedMcp to refresh it' })
    elseif s.status == 'connecting' then
      health.info(line)
    elseif s.status == 'untrusted' then
      health.warn(line, { "A project's .mcp.json: :TurnstonedMcp shows it and trusts it" })
    else
      health.warn(line, { 'See :TurnstonedMcp' })
    end
  end
end

--- The editor services the plugin declares, and what the current chat's model follows.
---@param cfg turnstoned.Config
local function check_editor(cfg)
  local client = require('turnstoned.client')
  if client.has_revision('1.12') then
    health.ok('editor services: diagnostics, open files, symbols (the language servers of your buffers), '
      .. 'unsaved buffers; the editor state goes with each prompt'
      .. (cfg.editor_context and '' or ' (off: editor_context = false)'))
  else
    health.info('this daemon does not read the editor (it needs protocol 1.12)')
  end
  local chat = package.loaded['turnstoned.session'] and require('turnstoned.session').peek()
  if not (chat and chat.sid) then
    return health.info('no chat yet: the project instructions are named once a session starts')
  end
  local label = chat:instructions_label()
  if label == '' then
    return health.info('the current chat\'s model reads no project instructions (AGENTS.md and the like)')
  end
  local truncated = vim.iter(chat.instructions):any(function(f)
    return f.truncated == true
  end)
  local say = truncated and health.warn or health.ok
  say('instructions the model reads: ' .. label,
    truncated and { 'The instructions are capped at 32,000 characters: shorten them' } or nil)
end

function M.check()
  local config = require('turnstoned.config')
  health.start('turnstoned')
  check_neovim()
  local ok, cfg = pcall(config.get)
  if not ok then
    return health.error(tostring(cfg))
  end
  health.ok('configuration is valid')
  if not check_command() or not check_start() then
    return
  end
  local client = require('turnstoned.client')
  local methods = require('turnstoned.protocol').methods
  local err, result = client.request_sync(methods.daemon_health, { probe = true }, TIMEOUT_MS)
  if err or not result then
    return health.error('daemon/health failed: ' .. (err and err.message or '?'))
  end
  check_model(result)
  check_models()
  check_sandbox(result.sandbox)
  local e2, servers = client.request_sync(methods.mcp_server_list, nil, TIMEOUT_MS)
  if e2 or not servers then
    return health.error('MCP server list failed: ' .. (e2 and e2.message or '?'))
  end
  check_mcp(servers.servers or {})
  check_editor(cfg)
end

return M
