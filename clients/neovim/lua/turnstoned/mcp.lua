--- Logging in to HTTP MCP servers (OAuth, protocol 1.14). A server that asks for a login
--- stops at "needs login" (`needsAuth`) and is not retried until you log in:
--- `:Turnstoned mcp login [name]` sends `mcpServer/login`, the daemon asks the editor to
--- open the server's login page (`mcpServer/authorize`), and the request answers once the
--- server connected (minutes, while you are in the browser: it never blocks the editor).
--- `:Turnstoned mcp logout [name]` forgets the tokens (`mcpServer/logout`).
---
--- The module also keeps what it last heard of each server (`mcpServer/list` answers,
--- `mcpServer/statusChanged`), for the picker's labels, the completion of names and the
--- one notification a server's turn to "needs login" gets.
local client = require('turnstoned.client')
local log = require('turnstoned.log')
local P = require('turnstoned.protocol')

local methods = P.methods
local levels = vim.log.levels
local M = {}

---@type table<string, turnstoned.McpServerInfo>  the last state heard of each server, by name
local known = {}
---@type table<string, fun()>  the logins this editor asked for and still waits on: their cancel
local logging_in = {}

---@param msg string
---@param level? integer
local function notify(msg, level)
  vim.notify('turnstoned: ' .. msg, level or levels.INFO)
end

--- A server on a line: name, state, counts, login state, origin, error.
---@param s turnstoned.McpServerInfo
---@return string
function M.label(s)
  local counts = ('%d tools'):format(s.tools or 0)
  if (s.resources or 0) > 0 or (s.prompts or 0) > 0 then
    counts = counts .. (', %d resources, %d prompts'):format(s.resources or 0, s.prompts or 0)
  end
  local label = ('%-20s %-10s %s'):format(s.name, s.status, counts)
  if s.needsAuth then
    label = label .. '  needs login'
  elseif s.loggedIn then
    label = label .. '  logged in'
  end
  if s.origin then
    label = label .. '  [' .. s.origin .. ']'
  end
  if s.error then
    label = label .. '  ' .. s.error:gsub('\n', ' ')
  end
  return label
end

--- The hint a server that needs a login gets.
---@param name string
---@return string
function M.login_hint(name)
  return (':Turnstoned mcp login %s'):format(name)
end

--- Record a server's state; a turn to `needsAuth` (it was not needing a login before, or was
--- not known) tells the user once, unless it happens during a login this editor runs (that
--- login's own answer says how it went).
---@param s turnstoned.McpServerInfo|turnstoned.McpServerStatusChanged
---@param quiet? boolean record only (a list the user is shown)
local function learn(s, quiet)
  if type(s) ~= 'table' or type(s.name) ~= 'string' then
    return
  end
  local before = known[s.name]
  known[s.name] = s
  if quiet or s.needsAuth ~= true or (before and before.needsAuth == true) or logging_in[s.name] then
    return
  end
  notify(('MCP server %s needs you to log in: %s'):format(s.name, M.login_hint(s.name)), levels.WARN)
end

--- What a list of servers (`mcpServer/list`) says, shown to the user: recorded, told nothing.
---@param servers turnstoned.McpServerInfo[]
function M.remember(servers)
  for _, s in ipairs(servers or {}) do
    learn(s, true)
  end
end

--- `mcpServer/statusChanged`: record it (and tell once when it turned to needing a login).
---@param params turnstoned.McpServerStatusChanged
function M.status_changed(params)
  learn(params)
end

--- The last state heard of server `name`.
---@param name string
---@return turnstoned.McpServerInfo?
function M.server(name)
  return known[name]
end

--- The servers a login or logout would be offered for, in the order offered: for `login`
--- those needing one first, then the others that run (not `disabled`, not `untrusted`);
--- for `logout` the logged-in ones.
---@param servers turnstoned.McpServerInfo[]
---@param action 'login'|'logout'
---@return turnstoned.McpServerInfo[]
function M.candidates(servers, action)
  local first, rest = {}, {}
  for _, s in ipairs(servers or {}) do
    if action == 'logout' then
      if s.loggedIn then
        first[#first + 1] = s
      end
    elseif s.needsAuth then
      first[#first + 1] = s
    elseif s.status ~= 'disabled' and s.status ~= 'untrusted' then
      rest[#rest + 1] = s
    end
  end
  return vim.list_extend(first, rest)
end

--- The names `:Turnstoned mcp login|logout <Tab>` completes, from what the plugin last heard
--- (completion does not start the daemon nor wait for it).
---@param action 'login'|'logout'
---@return string[]
function M.names(action)
  local servers = vim.tbl_values(known)
  table.sort(servers, function(a, b)
    return a.name < b.name
  end)
  return vim.tbl_map(function(s)
    return s.name
  end, M.candidates(servers, action))
end

--- `mcpServer/authorize`: open the login page with |vim.ui.open()|, and show its address
--- whatever happened (on a remote machine the user opens it themselves). `opened`: the
--- opener was started without an error.
---@param params turnstoned.McpAuthorizeParams
---@param respond fun(result: turnstoned.McpAuthorizeResponse)
function M.authorize(params, respond)
  local name, url = tostring(params.server), tostring(params.url)
  local ok, handle, err = pcall(vim.ui.open, url)
  local opened = ok and err == nil
  local problem = not ok and tostring(handle) or err
  log.info('%s %s: %s', methods.mcp_server_authorize, name,
    opened and 'the browser was asked to open the page' or ('not opened: ' .. tostring(problem)))
  local msg = ('Log in to MCP server %s in your browser: %s'):format(name, url)
  notify(opened and msg or (msg .. '\n(no browser opened: ' .. tostring(problem) .. ')'),
    opened and levels.INFO or levels.WARN)
  -- A tool call that needs more access: the chat it runs in keeps the address too.
  local chat = params.sessionId and require('turnstoned.session').get(params.sessionId)
  if chat then
    chat:note(('> 🔑 %s asks you to log in (more access for this call): %s'):format(name, url))
  end
  respond({ opened = opened })
end

--- Pick a server for `action` among the daemon's (`cb(name)`; nothing when dismissed).
---@param action 'login'|'logout'
---@param cb fun(name: string)
local function pick(action, cb)
  client.request(methods.mcp_server_list, nil, function(err, result)
    if err then
      return notify('cannot list MCP servers: ' .. err.message, levels.ERROR)
    end
    M.remember(result.servers or {})
    local choices = M.candidates(result.servers or {}, action)
    if #choices == 0 then
      return notify(action == 'logout' and 'no MCP server is logged in'
        or 'no MCP server to log in to (see :help turnstoned-mcp)')
    end
    vim.ui.select(choices, {
      prompt = action == 'logout' and 'Log out of which MCP server?' or 'Log in to which MCP server?',
      kind = 'turnstoned.mcp',
      format_item = M.label,
    }, function(choice)
      if choice then
        cb(choice.name)
      end
    end)
  end)
end

--- Run `fn()` once the daemon is up, if it speaks protocol 1.14 (MCP login).
---@param fn fun()
local function with_login_support(fn)
  client.start(function(err)
    if err then
      return notify('the daemon does not start: ' .. err, levels.ERROR)
    end
    if not client.has_revision('1.14') then
      return notify('this daemon has no MCP login (it needs protocol 1.14): update turnstoned', levels.ERROR)
    end
    fn()
  end)
end

--- A login this editor is waiting on, asked for again: keep waiting or cancel it.
---@param name string
local function still_waiting(name)
  vim.ui.select({ 'wait', 'cancel' }, {
    prompt = ('The login to %s waits for your browser'):format(name),
    kind = 'turnstoned.mcp',
    format_item = function(id)
      return id == 'wait' and 'Keep waiting' or ('Cancel the login to ' .. name)
    end,
  }, function(id)
    if id == 'cancel' and logging_in[name] then
      logging_in[name]()
    end
  end)
end

--- Log in to MCP server `name` (without a name, pick one: those needing a login first). The
--- request runs in the background; notifications say when it starts and how it ended.
---@param name? string
function M.login(name)
  with_login_support(function()
    if not name or name == '' then
      return pick('login', M.login)
    end
    if logging_in[name] then
      return still_waiting(name)
    end
    notify(('Logging in to %s…'):format(name))
    logging_in[name] = client.request(methods.mcp_server_login, { name = name }, function(err, result)
      logging_in[name] = nil
      if err then
        if err.code == P.error_codes.REQUEST_CANCELLED then
          return notify(('the login to %s was cancelled'):format(name), levels.WARN)
        end
        return notify(err.message, levels.ERROR)
      end
      local s = result.server
      learn(s, true)
      if s.loggedIn == false and s.status == 'connected' then
        return notify(('%s is connected (%d tools): it asks for no login'):format(s.name, s.tools or 0))
      end
      notify(('Logged in to %s (%d tools)'):format(s.name, s.tools or 0))
    end)
  end)
end

--- Forget MCP server `name`'s OAuth tokens (without a name, pick a logged-in one); it
--- reconnects without them.
---@param name? string
function M.logout(name)
  with_login_support(function()
    if not name or name == '' then
      return pick('logout', M.logout)
    end
    client.request(methods.mcp_server_logout, { name = name }, function(err, result)
      if err then
        return notify(err.message, levels.ERROR)
      end
      learn(result.server, true)
      notify(('Logged out of %s: its tokens are forgotten (%s logs in again)'):format(name,
        M.login_hint(name)))
    end)
  end)
end

--- Answer `mcpServer/authorize` and follow the servers' states (called once, on first use).
function M.wire()
  client.on_request(methods.mcp_server_authorize, M.authorize)
  client.on(methods.mcp_server_status_changed, M.status_changed)
end

return M
