--- `:TurnstonedSessions` and `:TurnstonedMcp`: lists shown through `vim.ui.select`.
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
  return iso and iso:gsub('T', ' '):sub(1, 16) or ''
end

--- Choices for the sessions picker: a new session, then every session, newest first.
---@param sessions turnstoned.SessionInfo[]
---@return {id: string, label: string}[]
function M.session_choices(sessions)
  local out = { { id = '', label = '+ new session' } }
  for _, s in ipairs(sessions) do
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
    vim.ui.select(M.session_choices(result.sessions or {}), {
      prompt = 'turnstoned sessions',
      kind = 'turnstoned.sessions',
      format_item = function(c)
        return c.label
      end,
    }, function(choice)
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
        ui.show(chat, { focus = true })
        return on_shown and on_shown(chat)
      end)
    end)
  end)
end

---@param s turnstoned.McpServerInfo
---@return string
function M.server_label(s)
  local counts = ('%d tools'):format(s.tools or 0)
  if (s.resources or 0) > 0 or (s.prompts or 0) > 0 then
    counts = counts .. (', %d resources, %d prompts'):format(s.resources or 0, s.prompts or 0)
  end
  local label = ('%-20s %-10s %s'):format(s.name, s.status, counts)
  if s.origin then
    label = label .. '  [' .. s.origin .. ']'
  end
  if s.error then
    label = label .. '  ' .. s.error:gsub('\n', ' ')
  end
  return label
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
  local actions = { { id = 'refresh', label = 'Refresh (reconnect, rediscover its tools)' } }
  if project then
    actions[#actions + 1] = { id = 'revoke', label = "Revoke trust in this project's .mcp.json (stops its servers)" }
  end
  return actions
end

---@param server turnstoned.McpServerInfo
local function server_actions(server)
  local trust = require('turnstoned.trust')
  local project = trust.project_file(server)
  vim.ui.select(M.server_actions(server), {
    prompt = M.server_label(server),
    kind = 'turnstoned.mcp',
    format_item = function(a)
      return a.label
    end,
  }, function(action)
    local id = action and action.id
    if id == 'refresh' then
      refresh(server.name)
    elseif id == 'trust' and project then
      trust.trust_file(project)
    elseif id == 'revoke' and project then
      trust.revoke_file(project)
    end
  end)
end

--- List the MCP servers with their state; pick one to act on it.
function M.mcp()
  client.request(methods.mcp_server_list, nil, function(err, result)
    if err then
      return notify('cannot list MCP servers: ' .. err.message, vim.log.levels.ERROR)
    end
    local servers = result.servers or {}
    if #servers == 0 then
      return notify('no MCP servers are configured (see :help turnstoned-mcp)')
    end
    local choices = vim.list_extend({}, servers)
    table.insert(choices, { name = '', status = '' })
    vim.ui.select(choices, {
      prompt = 'turnstoned MCP servers',
      kind = 'turnstoned.mcp',
      format_item = function(s)
        return s.name == '' and '↻ refresh all' or M.server_label(s)
      end,
    }, function(choice)
      if not choice then
        return
      elseif choice.name == '' then
        refresh(nil)
      else
        server_actions(choice)
      end
    end)
  end)
end

return M
