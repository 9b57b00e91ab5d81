--- The slash commands of a session (`session/commands`): the built-ins, then its skills and
--- MCP prompts, read afresh each time they are listed.
local client = require('turnstoned.client')
local P = require('turnstoned.protocol')
local session = require('turnstoned.session')

local M = {}

--- The last list any session gave: the built-ins are the same in every session, so a prompt
--- is told from a built-in without asking again.
---@type turnstoned.SessionCommand[]?
local last

--- List the current chat's commands; `cb(err, list, chat)`. A chat without a session asks
--- for those of its directory (`root`), which a new session there would offer, so typing
--- `/` starts no session.
---@param cb fun(err?: string, commands?: turnstoned.SessionCommand[], chat?: turnstoned.Chat)
function M.list(cb)
  local chat = session.current()
  local params = chat.sid and { sessionId = chat.sid } or { root = session.cwd() }
  client.request(P.methods.session_commands, params, function(e, result)
    if e then
      return cb(e.message)
    end
    chat.commands = result.commands or {}
    last = chat.commands
    cb(nil, chat.commands, chat)
  end)
end

--- The current chat's commands as last listed (any session's, before its own were).
---@return turnstoned.SessionCommand[]?
function M.known()
  local chat = session.peek()
  return chat and chat.commands or last
end

--- The command named `name` among `list`.
---@param list turnstoned.SessionCommand[]
---@param name string
---@return turnstoned.SessionCommand?
function M.find(list, name)
  for _, c in ipairs(list or {}) do
    if c.name == name then
      return c
    end
  end
end

--- A command's line in a list: `/name  description`, with its arguments.
---@param c turnstoned.SessionCommand
---@return string
function M.label(c)
  local args = vim.tbl_map(function(a)
    return a.required and ('{' .. a.name .. '}') or ('[' .. a.name .. ']')
  end, c.arguments or {})
  local name = '/' .. c.name .. (#args > 0 and (' ' .. table.concat(args, ' ')) or '')
  local kind = c.kind ~= 'builtin' and ('  (' .. c.kind .. ')') or ''
  return ('%-20s %s%s'):format(name, c.description or '', kind)
end

return M
