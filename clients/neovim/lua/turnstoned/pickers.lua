--- `:TurnstonedSessions`, `:TurnstonedMcp` and `:TurnstonedWatches`: lists shown through
--- `vim.ui.select`.
local client = require('turnstoned.client')
local P = require('turnstoned.protocol')

local methods = P.methods
local M = {}

---@param msg string
---@param level? integer
local function notify(msg, level)
  vim.notify('turnstoned: ' .. msg, level or vim.log.levels.INFO)
end

---@param iso? string
---@return string
local function when(iso)
  return type(iso) == 'string' and iso:gsub('T', ' '):sub(1, 16) or ''
end

--- `vim.ui.select` over `{id, label}` choices (or items with `format`); `on_choice(item)`.
---@param items table[]
---@param prompt string
---@param kind string
---@param on_choice fun(item?: table)
---@param format? fun(item: table): string
function M.select(items, prompt, kind, on_choice, format)
  vim.ui.select(items, {
    prompt = prompt,
    kind = kind,
    format_item = format or function(c)
      return c.label
    end,
  }, on_choice)
end

--- Choices for the sessions picker: a new session, then the sessions of directory `here`
--- (newest first), then the others (newest first).
---@param sessions turnstoned.SessionInfo[]
---@param here? string the current session directory
---@return {id: string, label: string}[]
function M.session_choices(sessions, here)
  local out = { { id = '', label = '+ new session' } }
  local function real(dir)
    return type(dir) == 'string' and (vim.uv.fs_realpath(dir) or dir) or ''
  end
  local home = here and real(here)
  local ordered = {}
  for i, s in ipairs(sessions) do
    ordered[#ordered + 1] = { s = s, i = i, away = (home and s.cwd ~= here and real(s.cwd) ~= home) and 1 or 0 }
  end
  table.sort(ordered, function(a, b)
    if a.away ~= b.away then
      return a.away < b.away
    end
    return a.i < b.i
  end)
  for _, o in ipairs(ordered) do
    local s = o.s
    out[#out + 1] = {
      id = s.sessionId,
      label = ('%s  %-7s %s  (%s)'):format(when(s.updatedAt), s.status,
        s.title or '(untitled)', vim.fn.fnamemodify(s.cwd, ':~')),
    }
  end
  return out
end

--- Pick a session and show it (its history redrawn), or start a new one.
---@param on_shown? fun(chat: turnstoned.Chat)
function M.sessions(on_shown)
  client.request(methods.session_list, nil, function(err, result)
    if err then
      return notify('cannot list sessions: ' .. err.message, vim.log.levels.ERROR)
    end
    local here = require('turnstoned.session').cwd()
    M.select(M.session_choices(result.sessions or {}, here), 'turnstoned sessions', 'turnstoned.sessions',
      function(choice)
      if not choice then
        return
      end
      local session, ui = require('turnstoned.session'), require('turnstoned.ui')
      if choice.id == '' then
        local chat = session.new()
        ui.show(chat, { focus = true })
        return on_shown and on_shown(chat)
      end
      session.resume(choice.id, function(e, chat)
        if e or not chat then
          return notify('cannot resume: ' .. (e or '?'), vim.log.levels.ERROR)
        end
        ui.show(chat, { focus = true, at_end = true })
        return on_shown and on_shown(chat)
      end)
    end)
  end)
end

--- A server on a line (name, state, counts, "needs login" / "logged in", origin, error).
---@param s turnstoned.McpServerInfo
---@return string
function M.server_label(s)
  return require('turnstoned.mcp').label(s)
end

---@param name? string
local function refresh(name)
  client.request(methods.mcp_server_refresh, name and { name = name } or nil, function(err, result)
    if err then
      return notify('refresh failed: ' .. err.message, vim.log.levels.ERROR)
    end
    local lines = {}
    for _, c in ipairs(result.changes or {}) do
      lines[#lines + 1] = ('%s: +%d -%d%s'):format(c.server, #(c.added or {}), #(c.removed or {}),
        c.error and (' (' .. c.error .. ')') or '')
    end
    notify(#lines > 0 and ('refreshed\n' .. table.concat(lines, '\n')) or 'no changes')
  end)
end

---@param server turnstoned.McpServerInfo
---@return {id: string, label: string}[]
function M.server_actions(server)
  local project = require('turnstoned.trust').project_file(server)
  if server.status == 'untrusted' then
    return project and { { id = 'trust', label = "Trust this project's .mcp.json (see it first)…" } } or {}
  end
  local actions = {}
  if server.needsAuth then
    actions[#actions + 1] = { id = 'login', label = 'Log in (opens the login page in your browser)' }
  end
  actions[#actions + 1] = { id = 'refresh', label = 'Refresh (reconnect, rediscover its tools)' }
  if server.loggedIn then
    actions[#actions + 1] = { id = 'logout', label = 'Log out (forget its tokens)' }
  end
  if project then
    actions[#actions + 1] = { id = 'revoke', label = "Revoke trust in this project's .mcp.json (stops its servers)" }
  end
  return actions
end

---@param server turnstoned.McpServerInfo
local function server_actions(server)
  local trust = require('turnstoned.trust')
  local project = trust.project_file(server)
  M.select(M.server_actions(server), M.server_label(server), 'turnstoned.mcp', function(action)
    local id = action and action.id
    if id == 'refresh' then
      refresh(server.name)
    elseif id == 'login' then
      require('turnstoned.mcp').login(server.name)
    elseif id == 'logout' then
      require('turnstoned.mcp').logout(server.name)
    elseif id == 'trust' and project then
      trust.trust_file(project)
    elseif id == 'revoke' and project then
      trust.revoke_file(project)
    end
  end)
end

--- List the MCP servers with their state; pick one to act on it (refresh, log in or out,
--- trust or revoke its project's config).
function M.mcp()
  client.request(methods.mcp_server_list, nil, function(err, result)
    if err then
      return notify('cannot list MCP servers: ' .. err.message, vim.log.levels.ERROR)
    end
    local servers = result.servers or {}
    require('turnstoned.mcp').remember(servers)
    if #servers == 0 then
      return notify('no MCP servers are configured (see :help turnstoned-mcp)')
    end
    local choices = vim.list_extend({}, servers)
    table.insert(choices, { name = '', status = '' })
    M.select(choices, 'turnstoned MCP servers', 'turnstoned.mcp', function(choice)
      if not choice then
        return
      elseif choice.name == '' then
        refresh(nil)
      else
        server_actions(choice)
      end
    end, function(s)
      return s.name == '' and '↻ refresh all' or M.server_label(s)
    end)
  end)
end

--- "5m", "1h30m", "45s".
---@param seconds number
---@return string
local function every(seconds)
  local s = math.floor(seconds)
  local h, m, rest = math.floor(s / 3600), math.floor(s % 3600 / 60), s % 60
  local out = (h > 0 and (h .. 'h') or '') .. (m > 0 and (m .. 'm') or '') .. (rest > 0 and (rest .. 's') or '')
  return out ~= '' and out or '0s'
end

--- One watch on a line: name, interval, polls, next poll, command (and its session when
--- it is not the current chat's).
---@param w turnstoned.WatchInfo
---@param current_sid? string
---@return string
function M.watch_label(w, current_sid)
  local label = ('%-16s every %s · poll %d/%d · next %s · $ %s'):format(w.name, every(w.intervalSeconds),
    w.pollCount or 0, w.maxPolls, when(w.nextPollAt):sub(12), (w.command:gsub('\n', ' ')))
  if w.sessionId ~= current_sid then
    label = label .. ('  [session %s]'):format(w.sessionId:sub(1, 8))
  end
  return label
end

---@param w turnstoned.WatchInfo
local function cancel_watch(w)
  client.request(methods.watch_cancel, { sessionId = w.sessionId, name = w.watchId }, function(err, result)
    if err then
      return notify('cannot cancel the watch: ' .. err.message, vim.log.levels.ERROR)
    end
    notify(result.cancelled and ('cancelled the watch ' .. w.name)
      or ('the watch %s had already ended (%s)'):format(w.name, result.watch.ended or '?'))
  end)
end

--- The running watches (of every session); pick one to cancel it.
function M.watches()
  local chat = require('turnstoned.session').peek()
  local sid = chat and chat.sid
  client.request(methods.watch_list, nil, function(err, result)
    if err then
      return notify('cannot list watches: ' .. err.message, vim.log.levels.ERROR)
    end
    local watches = result.watches or {}
    if #watches == 0 then
      return notify('no watch is running')
    end
    M.select(watches, 'turnstoned watches (next due first)', 'turnstoned.watches', function(w)
      if not w then
        return
      end
      M.select({ { id = 'cancel', label = 'Cancel this watch (it polls no more)' }, { id = 'keep', label = 'Keep it' } },
        M.watch_label(w, sid), 'turnstoned.watches', function(action)
          if action and action.id == 'cancel' then
            cancel_watch(w)
          end
        end)
    end, function(w)
      return M.watch_label(w, sid)
    end)
  end)
end

return M
