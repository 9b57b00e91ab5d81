--- Slash commands as a prompt is sent: a built-in (`/compact`, `/undo`, `/redo`, `/mode
--- NAME`, `/model NAME`, `/new`, `/clear`) runs the request the daemon names for it instead
--- of being sent; a skill or an MCP prompt (`/name words`) is sent as typed, and the daemon
--- runs it; any other `/word` is plain text. `:Turnstoned commands` lists them.
local actions = require('turnstoned.actions')
local changes = require('turnstoned.changes')
local commands = require('turnstoned.commands')
local models = require('turnstoned.models')
local P = require('turnstoned.protocol')
local session = require('turnstoned.session')
local ui = require('turnstoned.ui')

local methods = P.methods
local M = {}

---@param msg string
---@param level? integer
local function notify(msg, level)
  vim.notify('turnstoned: ' .. msg, level or vim.log.levels.INFO)
end

local function fresh_chat()
  ui.show(session.new(), { focus = true })
end

--- What each built-in's request does here, given the words after the command.
---@type table<string, fun(args: string)>
local BY_REQUEST = {
  [methods.session_compact] = function()
    actions.compact()
  end,
  [methods.turn_undo] = function(args)
    changes.undo_last(args == 'rewind')
  end,
  [methods.turn_redo] = function()
    changes.redo_latest()
  end,
  [methods.session_set_mode] = function(args)
    actions.mode(args ~= '' and args or nil)
  end,
  [methods.session_set_model] = function(args)
    models.pick(args ~= '' and args or nil)
  end,
}

--- The built-ins that are the client's own actions (no request).
---@type table<string, fun(args: string)>
local OWN = { new = fresh_chat, clear = fresh_chat }

--- Run built-in `cmd` with the words after it.
---@param cmd turnstoned.SessionCommand
---@param args string
function M.run(cmd, args)
  local run = cmd.request and BY_REQUEST[cmd.request] or (not cmd.request and OWN[cmd.name])
  if not run then
    return notify(('/%s (%s) is not known to this version of the plugin'):format(cmd.name,
      cmd.request or 'its own action'), vim.log.levels.WARN)
  end
  run(args)
end

--- A prompt's command name and the words after it, when it starts with `/name`.
---@param text string
---@return string? name, string args
function M.split(text)
  local name, args = text:match('^/([%w_.:-]+)(.*)$')
  return name, vim.trim(args or '')
end

--- Send what the prompt window holds: a built-in runs, anything else is a prompt.
---@param text string
function M.send(text)
  local name, args = M.split(text)
  if not name then
    return session.send(text)
  end
  local function decide(list)
    local cmd = commands.find(list or {}, name)
    if cmd and cmd.kind == 'builtin' then
      return M.run(cmd, args)
    end
    session.send(text) -- a skill or an MCP prompt (the daemon runs it), or plain text
  end
  local known = commands.known()
  if known then
    return decide(known)
  end
  commands.list(function(err, list)
    if err then
      notify('cannot list the slash commands: ' .. err, vim.log.levels.WARN)
    end
    decide(list)
  end)
end

--- `:Turnstoned commands`: pick a slash command. A built-in runs (its argument picked
--- when it needs one); a skill or prompt goes into the prompt window for its words.
function M.pick()
  commands.list(function(err, list)
    if err then
      return notify('cannot list the slash commands: ' .. err, vim.log.levels.ERROR)
    end
    vim.ui.select(list or {}, {
      prompt = 'turnstoned slash commands',
      kind = 'turnstoned.commands',
      format_item = commands.label,
    }, function(cmd)
      if not cmd then
        return
      end
      if cmd.kind == 'builtin' then
        return M.run(cmd, '')
      end
      ui.show(session.current(), { focus = true })
      ui.prefill({ '/' .. cmd.name .. ' ' })
      vim.cmd.startinsert({ bang = true })
    end)
  end)
end

return M
