--- Choosing a model: `:Turnstoned model [name]` switches the current chat's session
--- (`session/setModel`) and remembers the choice for the workspace's new sessions; with
--- no model configured, the models local servers serve are offered (`model/list`) and the
--- one picked is saved as the daemon's (`model/use`).
local client = require('turnstoned.client')
local P = require('turnstoned.protocol')
local session = require('turnstoned.session')
local store = require('turnstoned.store')

local methods = P.methods
local M = {}

---@param msg string
---@param level? integer
local function notify(msg, level)
  vim.notify('turnstoned: ' .. msg, level or vim.log.levels.INFO)
end

local short = require('turnstoned.notices').short

--- A model's line in the picker.
---@param m turnstoned.ModelOption
---@param now? string the chat's model
---@return string
function M.label(m, now)
  local notes = {}
  if m.name == now then
    notes[#notes + 1] = 'this chat'
  end
  if m.current then
    notes[#notes + 1] = 'the default'
  end
  if type(m.contextWindow) == 'number' then
    notes[#notes + 1] = short(m.contextWindow) .. ' context'
  end
  if m.server ~= 'configured' then
    notes[#notes + 1] = 'on ' .. m.server
  end
  return m.name .. (#notes > 0 and ('  (' .. table.concat(notes, ', ') .. ')') or '')
end

--- What to say when no model is configured and no local server serves one.
M.HOW_TO_CONFIGURE = 'no model is configured, and no local model server (Ollama, llama.cpp, vLLM, '
  .. "LM Studio) answers on this machine: set [model] name and base_url in the daemon's "
  .. 'config.toml, or start a local server. See :checkhealth turnstoned and :help turnstoned-models'

--- Make `m` the daemon's model (`model/use`, saved to its config.toml).
---@param m turnstoned.ModelOption
---@param cb? fun(err?: string)
---@param again? boolean a prompt failed for want of a model: say to send it again
function M.use(m, cb, again)
  client.request(methods.model_use, { name = m.name, baseUrl = m.baseUrl, save = true }, function(err, result)
    if err then
      notify('cannot use ' .. m.name .. ': ' .. err.message, vim.log.levels.ERROR)
      return cb and cb(err.message)
    end
    ---@cast result turnstoned.ModelUseResult
    local chat = session.peek()
    if chat then
      chat.default_model = result.model
    end
    session.refresh()
    notify(('%s%s is the model now%s%s'):format(result.model,
      m.server ~= 'configured' and (' on ' .. m.server) or '',
      result.savedTo and (' (saved to ' .. vim.fn.fnamemodify(result.savedTo, ':~') .. ')') or '',
      again and '; send your prompt again' or ''))
    return cb and cb(nil)
  end)
end

local offering = false

--- Offer the models local servers serve (a first run: none is configured).
---@param result turnstoned.ModelListResult
---@param cb? fun(used?: turnstoned.ModelOption)
---@param again? boolean a prompt failed for want of a model
function M.offer(result, cb, again)
  cb = cb or function() end
  local found = result.models or {}
  if #found == 0 then
    notify(M.HOW_TO_CONFIGURE, vim.log.levels.WARN)
    return cb(nil)
  end
  if offering then
    return cb(nil)
  end
  offering = true
  local choices, prompt = {}, nil
  if #found == 1 then
    local m = found[1]
    prompt = ('Use %s on %s?'):format(m.name, m.server)
    choices = { { model = m, label = 'Use it (saved to the daemon\'s config.toml)' }, { label = 'Not now' } }
  else
    prompt = 'No model is configured. Use one a local server serves?'
    for _, m in ipairs(found) do
      choices[#choices + 1] = { model = m, label = ('%s on %s (%s)'):format(m.name, m.server, m.baseUrl) }
    end
    choices[#choices + 1] = { label = 'Not now' }
  end
  vim.ui.select(choices, {
    prompt = prompt,
    kind = 'turnstoned.model',
    format_item = function(c)
      return c.label
    end,
  }, function(choice)
    offering = false
    if not (choice and choice.model) then
      return cb(nil)
    end
    M.use(choice.model, function(err)
      cb(not err and choice.model or nil)
    end, again)
  end)
end

--- Switch the current chat to model `name` and remember it for the workspace's new
--- sessions. Before the chat has a session, it is the model the session starts with.
---@param name string
---@param cb? fun(err?: string)
function M.switch(name, cb)
  local chat = session.current()
  local cwd = session.cwd()
  session.set_model(name, function(err, result)
    if err then
      notify('cannot switch the model: ' .. err, vim.log.levels.ERROR)
      return cb and cb(err)
    end
    ---@cast result turnstoned.SessionSetModelResult
    local saved, why = store.set(cwd, 'model', name)
    if chat.sid then
      chat:note(('> ⚙ model: **%s** (was %s)'):format(result.model, result.previous or chat.default_model or 'the default'))
      chat.answering = false
    end
    notify(('model %s for this chat%s'):format(result.model, saved
      and (' and new sessions in ' .. vim.fn.fnamemodify(cwd, ':~'))
      or (' (not remembered: ' .. tostring(why) .. ')')))
    return cb and cb(nil)
  end)
end

--- `:Turnstoned model [name]`: switch to `name`, or pick among what the server lists (on a
--- first run, among what local servers serve).
---@param name? string
function M.pick(name)
  if name and name ~= '' then
    return M.switch(name)
  end
  client.request(methods.model_list, nil, function(err, result)
    if err then
      return notify('cannot list the models: ' .. err.message, vim.log.levels.ERROR)
    end
    ---@cast result turnstoned.ModelListResult
    if not result.configured then
      return M.offer(result)
    end
    if result.error then
      notify('the model server could not say what it serves: ' .. result.error
        .. ' (:Turnstoned model {name} switches anyway)', vim.log.levels.WARN)
    end
    local now = session.model(session.current())
    vim.ui.select(result.models or {}, {
      prompt = 'turnstoned model' .. (now and (' (now ' .. now .. ')') or ''),
      kind = 'turnstoned.model',
      format_item = function(m)
        return M.label(m, now)
      end,
    }, function(choice)
      if choice then
        M.switch(choice.name)
      end
    end)
  end)
end

--- A turn failed because no model is configured: offer what local servers serve.
---@param p turnstoned.TurnCompleted
local function turn_completed(p)
  local e = type(p.error) == 'table' and p.error or nil
  if p.status ~= 'failed' or not e or e.kind ~= 'notConfigured' or not session.get(p.sessionId) then
    return
  end
  client.request(methods.model_list, nil, function(err, result)
    if not err and result and not result.configured then
      M.offer(result, nil, true)
    end
  end)
end

--- Listen for turns that fail for want of a model (called once, on first use).
function M.wire()
  client.on(methods.turn_completed, turn_completed)
end

return M
