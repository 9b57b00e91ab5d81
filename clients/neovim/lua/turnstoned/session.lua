--- Sessions and their transcripts: sending prompts, interrupting, resuming, and routing the
--- daemon's notifications to the right chat.
local Chat = require('turnstoned.chat')
local client = require('turnstoned.client')
local log = require('turnstoned.log')
local mentions = require('turnstoned.mentions')
local plan = require('turnstoned.plan')
local P = require('turnstoned.protocol')
local store = require('turnstoned.store')

local methods = P.methods
local M = {}

---@type table<string, turnstoned.Chat>
local chats = {}
---@type turnstoned.Chat?
local current

--- Tell whoever draws chat state (the winbar, a statusline) that it changed.
local function refresh()
  vim.api.nvim_exec_autocmds('User', { pattern = 'TurnstonedChanged', modeline = false })
end
M.refresh = refresh

--- The chat shown by `:Turnstoned` (a new, session-less one until a prompt is sent).
---@return turnstoned.Chat
function M.current()
  if not current or not vim.api.nvim_buf_is_valid(current.buf) then
    current = Chat.new(nil)
  end
  return current
end

--- The current chat, without creating one.
---@return turnstoned.Chat?
function M.peek()
  return current
end

---@param sid string
---@return turnstoned.Chat?
function M.get(sid)
  return chats[sid]
end

--- The chat whose transcript is `buf`.
---@param buf integer
---@return turnstoned.Chat?
function M.by_buf(buf)
  if current and current.buf == buf then
    return current
  end
  for _, chat in pairs(chats) do
    if chat.buf == buf then
      return chat
    end
  end
end

---@param params table
---@param fn fun(chat: turnstoned.Chat, params: table)
local function route(params, fn)
  local chat = params.sessionId and chats[params.sessionId]
  if chat and vim.api.nvim_buf_is_valid(chat.buf) then
    fn(chat, params)
  end
end

---@param chat turnstoned.Chat
local function working(chat)
  local lhs = require('turnstoned.config').get().keymaps.interrupt
  chat:working(lhs and ('working… (%s interrupts)'):format(lhs) or 'working…')
end

local remember_undo

--- What a prompt waiting for the running turn says, after its heading.
local QUEUED = '  queued: the running turn reads it at its next step'

local DECIDED = { approve = 'running', always = 'running', auto = 'running', deny = 'declined',
  timeout = 'declined', cancelled = 'cancelled' }

--- What the chat knows of one of its turns (for undo, review and rerun).
---@class turnstoned.TurnRecord
---@field id string
---@field prompt? string          the prompt that started it (none: the daemon started it)
---@field checkpoint? turnstoned.TurnCheckpoint  what it changed, once it ended
---@field undone? string          the undo that took it back
---@field resumed? boolean        known from the session's history (what it changed is asked when needed)

--- The record of turn `id` of `chat`, made when it is new.
---@param chat turnstoned.Chat
---@param id string
---@return turnstoned.TurnRecord
function M.turn(chat, id)
  chat.turns = chat.turns or {}
  for _, t in ipairs(chat.turns) do
    if t.id == id then
      return t
    end
  end
  local t = { id = id }
  table.insert(chat.turns, t)
  return t
end

--- Remember the turns a session's history names (its userMessage items carry the turn they
--- started, from protocol 1.12), so undo, review and rerun reach turns from before a restart.
---@param chat turnstoned.Chat
---@param items turnstoned.Item[]
function M.remember_turns(chat, items)
  for _, item in ipairs(items or {}) do
    if item.type == 'userMessage' and type(item.turnId) == 'string' then
      local t = M.turn(chat, item.turnId)
      t.prompt = t.prompt or item.text
      if not t.checkpoint then
        t.resumed = true
      end
    end
  end
end

--- The approval mode of a chat's session (of its next session, before it has one).
---@param chat? turnstoned.Chat
---@return turnstoned.ApprovalMode?
function M.mode(chat)
  if chat and chat.mode then
    return chat.mode
  end
  return chat and chat.info and chat.info.approvalMode or require('turnstoned.config').get().mode
end

---@param chat turnstoned.Chat
---@param p turnstoned.TurnCompleted
local function turn_completed(chat, p)
  if p.checkpoint ~= nil and p.checkpoint ~= vim.NIL then
    M.turn(chat, p.turnId).checkpoint = p.checkpoint
    chat:changes_block(p.turnId, p.checkpoint)
  end
  if chat.turn_id and chat.turn_id ~= p.turnId then
    return
  end
  chat.running, chat.turn_id = false, nil
  chat.turns_completed = (chat.turns_completed or 0) + 1
  chat.usage = p.usage or chat.usage
  chat:working(nil)
  if p.status == 'interrupted' then
    chat:note('_⊘ interrupted_')
  elseif p.status == 'failed' then
    local e = p.error or { kind = 'internal', message = 'unknown error' }
    chat:note(('> ✗ **turn failed** (%s): %s'):format(e.kind, e.message))
  end
  refresh()
end

---@param chat turnstoned.Chat
---@param p turnstoned.ApprovalResolved
local function approval_resolved(chat, p)
  for _, id in ipairs(p.callIds or {}) do
    local decision = (p.calls or {})[id] or p.decision
    chat:calls_status({ id }, DECIDED[decision] or 'pending')
  end
  if chat.running then
    working(chat)
  end
end

--- What each notification of a session does to its chat.
---@type table<string, fun(chat: turnstoned.Chat, p: table)>
local handlers = {
  -- Another client sent this session a prompt (protocol 1.15): shown as if typed here.
  [methods.session_input] = function(chat, p)
    chat:user_item(p.item or {}, p.turnId == nil and (p.item or {}).queued and QUEUED or nil)
    if p.turnId then
      M.turn(chat, p.turnId).prompt = (p.item or {}).text
    end
  end,
  [methods.turn_started] = function(chat, p)
    if not chat.prompt_pending then -- the daemon started it (a watch fired): a new answer
      chat.answering = false
    end
    chat.running, chat.turn_id, chat.prompt_pending = true, p.turnId, false
    plan.turn_started(chat, p.turnId)
    working(chat)
    refresh()
  end,
  [methods.plan_updated] = function(chat, p)
    plan.show(chat, p.turnId, p.steps or {}, p.explanation)
  end,
  [methods.item_started] = function(chat, p)
    chat:item_started(p.item, p.parentCallId)
  end,
  [methods.item_agent_message_delta] = function(chat, p)
    chat:delta(p.itemId, p.delta)
  end,
  [methods.item_reasoning_delta] = function(chat, p)
    chat:delta(p.itemId, p.delta)
  end,
  [methods.item_tool_call_output_delta] = function(chat, p)
    chat:tool_output(p.itemId, p.chunk)
  end,
  [methods.item_completed] = function(chat, p)
    chat:item_completed(p.item, p.parentCallId)
  end,
  [methods.approval_resolved] = approval_resolved,
  [methods.turn_completed] = turn_completed,
  [methods.preview_open] = function(chat, p)
    require('turnstoned.preview').opened(chat, p)
  end,
  [methods.session_usage] = function(chat, p)
    chat.context = { tokens = p.contextTokens, window = p.contextWindow }
    refresh()
  end,
  [methods.session_mode_changed] = function(chat, p)
    if p.mode ~= p.previous then
      chat:note(('> ⚙ approval mode: **%s** (was %s)'):format(p.mode, p.previous))
    end
    chat.mode = p.mode
    refresh()
  end,
  [methods.session_compacted] = function(chat, p)
    chat.context = { tokens = p.contextTokensAfter, window = p.contextWindow }
    require('turnstoned.notices').compacted(chat, p)
    refresh()
  end,
}

--- Another client undid or redid turns of a chat open here: its redo is ours too.
---@param chat turnstoned.Chat
---@param kind 'undo'|'redo'
---@param data {undoId?: string, turnIds?: string[], rewound?: boolean}
remember_undo = function(chat, kind, data)
  if type(data.undoId) ~= 'string' then
    return
  end
  chat.undos = chat.undos or {}
  local known
  for _, u in ipairs(chat.undos) do
    if u.id == data.undoId then
      known = u
    end
  end
  if kind == 'redo' then
    if known then
      known.redone = true
    end
    for _, t in ipairs(chat.turns or {}) do
      if t.undone == data.undoId then
        t.undone = nil
      end
    end
  elseif not known then
    table.insert(chat.undos, { id = data.undoId, rewound = data.rewound == true })
    for _, id in ipairs(data.turnIds or {}) do
      M.turn(chat, id).undone = data.undoId
    end
  end
end

--- A session-level notice: in its transcript; the model's `notify` also as a notification,
--- whether or not that session is open here.
---@param p turnstoned.SessionNotice
local function notice(p)
  if p.kind == 'notify' then
    local title = (p.data or {}).title
    vim.notify((title and (title .. ': ') or '') .. (p.text or ''), vim.log.levels.INFO,
      { title = 'turnstoned' })
  end
  if p.kind == 'undo' or p.kind == 'redo' then
    local chat = chats[p.sessionId]
    if not chat or chat.own_undo then
      return
    end
    remember_undo(chat, p.kind, type(p.data) == 'table' and p.data or {})
    if type(p.data) == 'table' and p.data.rewound then -- another client moved the conversation
      return M.redraw(chat, function()
        require('turnstoned.notices').live(chat, p)
      end)
    end
  end
  route(p, require('turnstoned.notices').live)
end

---@param code integer
local function daemon_exited(code)
  for _, chat in pairs(chats) do
    if chat.running then
      chat.running, chat.turn_id = false, nil
      chat:working(nil)
      chat:note(('> ✗ the daemon exited (code %d); the next prompt starts it again'):format(code))
    end
  end
  refresh()
end

--- Subscribe to the daemon's notifications (called once, on first use).
function M.wire()
  for method, fn in pairs(handlers) do
    client.on(method, function(params)
      route(params, fn)
    end)
  end
  client.on(methods.session_notice, notice)
  client.on(methods.mcp_server_status_changed, function(p)
    log.info('MCP server %s: %s%s', p.name, p.status, p.error and (' (' .. p.error .. ')') or '')
  end)
  client.on_exit(daemon_exited)
end

--- A picture for the next prompt, as `:Turnstoned image` or `paste-image` attached it.
---@class turnstoned.Attachment
---@field name string             what the transcript calls it
---@field item turnstoned.ImageInput

--- A prompt on its way: its text, what goes with it and where the transcript shows it.
---@class turnstoned.Outgoing
---@field text string
---@field mark integer the prompt's heading in the transcript
---@field editor? turnstoned.EditorState what the user had in front of them as they sent it
---@field attachments turnstoned.Attachment[]

--- The input items of a prompt: its text, the files it mentions with @, its pictures
--- (the last two from protocol 1.13).
---@param chat turnstoned.Chat
---@param out turnstoned.Outgoing
---@return turnstoned.InputItem[]
local function input_of(chat, out)
  local input = { { type = 'text', text = out.text } }
  if client.has_revision('1.13') then
    local cwd = chat.info and chat.info.cwd or M.cwd()
    vim.list_extend(input, mentions.items(out.text, cwd))
    for _, a in ipairs(out.attachments) do
      input[#input + 1] = a.item
    end
  end
  return input
end

---@param chat turnstoned.Chat
---@param out turnstoned.Outgoing
---@param retried? boolean
local function start_turn(chat, out, retried)
  local input
  local function started(err, result)
    if err and err.code == P.error_codes.SESSION_CLOSED and not retried then
      return client.request(methods.session_resume, { sessionId = chat.sid }, function(e)
        if e then
          return chat:note('> ✗ ' .. e.message)
        end
        start_turn(chat, out, true)
      end)
    end
    if err or result.queued then
      chat.prompt_pending = false
    end
    if err then
      local lost = #out.attachments > 0
        and (#out.attachments == 1 and ' (the picture was not sent)' or ' (the pictures were not sent)') or ''
      return chat:note('> ✗ ' .. err.message .. lost)
    end
    if result.queued then
      local mentioned = vim.iter(input or {}):any(function(i)
        return i.type == 'mention'
      end)
      -- The daemon queues the text alone: what it mentions is not read with it.
      chat:user_note(out.mark, QUEUED
        .. (mentioned and ' (without the files it mentions: send them with a new prompt)' or ''))
    else
      chat.turn_id = result.turnId
      M.turn(chat, result.turnId).prompt = out.text
    end
  end
  -- Started first: what the input may hold depends on the daemon's protocol revision.
  client.start(function(failed)
    if failed then
      chat.prompt_pending = false
      return chat:note('> ✗ ' .. failed)
    end
    input = input_of(chat, out)
    client.request(methods.turn_start, {
      sessionId = chat.sid,
      input = input,
      editor = out.editor and client.has_revision('1.12') and out.editor or nil,
    }, started)
  end)
end

--- The directory of the current chat's session (of the next session, before it starts).
---@return string
function M.cwd()
  local info = current and current.info
  local dir = info and info.cwd or require('turnstoned.config').get().cwd or vim.fn.getcwd()
  return (vim.fs.normalize(vim.fn.fnamemodify(dir, ':p')):gsub('/$', ''))
end

--- The model the daemon uses for a session without one of its own, for the winbar.
---@param chat turnstoned.Chat
local function learn_default_model(chat)
  if chat.default_model then
    return
  end
  client.request(methods.daemon_health, { probe = false }, function(err, result)
    if not err and result and type(result.model) == 'string' then
      chat.default_model = result.model
      refresh()
    end
  end)
end

--- The model new sessions in `cwd` start with: the one chosen there before (`:Turnstoned
--- model`), or nil for the daemon's.
---@param cwd string
---@return string?
function M.workspace_model(cwd)
  local name = store.get(cwd, 'model')
  return type(name) == 'string' and name ~= '' and name or nil
end

--- Start the session of a chat that has none yet; `cb(err)` once it has one. Calls made
--- while it starts wait for the same start.
---@param chat turnstoned.Chat
---@param cb fun(err?: string)
function M.start_session(chat, cb)
  if chat.sid then
    return cb(nil)
  end
  if chat.starting then
    table.insert(chat.starting, cb)
    return
  end
  chat.starting = { cb }
  local function settle(err)
    local waiting = chat.starting or {}
    chat.starting = nil
    for _, fn in ipairs(waiting) do
      fn(err)
    end
  end
  local cwd = M.cwd()
  local mode = M.mode(chat)
  local own = chat.model or M.workspace_model(cwd)
  client.request(methods.session_start, { cwd = cwd, approvalMode = mode, model = own },
    function(err, result)
    if err then
      return settle(err.message)
    end
    chat.info = chat.info or { cwd = cwd }
    chat.mode, chat.model = mode, own
    chat.instructions = result.instructions
    chat:bind(result.sessionId)
    chats[result.sessionId] = chat
    refresh()
    if not mode then -- the daemon's default: its session info says which
      client.request(methods.session_resume, { sessionId = result.sessionId }, function(e, r)
        if not e and r and r.session then
          chat.info, chat.mode = r.session, chat.mode or r.session.approvalMode
          refresh()
        end
      end)
    end
    if not own then
      learn_default_model(chat)
    end
    settle(nil)
  end)
end

--- Send a prompt in the current chat, starting its session first if needed. The pictures
--- attached to the chat go with it; the files it names with @ are mentioned.
---@param text string
function M.send(text)
  local editor = require('turnstoned.editor').state()
  local chat = M.current()
  local attachments = chat.attachments or {}
  chat.attachments = nil
  local mark = chat:user(text, nil, vim.tbl_map(function(a)
    return a.name
  end, attachments))
  if #attachments > 0 then
    refresh()
  end
  chat.title = chat.title or vim.split(text, '\n')[1]
  chat.prompt_pending = true
  local out = { text = text, mark = mark, editor = editor, attachments = attachments }
  M.start_session(chat, function(err)
    if err then
      chat.prompt_pending = false
      return chat:note('> ✗ cannot start a session: ' .. err)
    end
    start_turn(chat, out)
  end)
end

--- Stop the current chat's running turn.
---@return boolean sent whether a turn was running
function M.interrupt()
  local chat = current
  if not (chat and chat.sid and (chat.running or chat.turn_id)) then
    vim.notify('turnstoned: no turn is running', vim.log.levels.INFO)
    return false
  end
  client.request(methods.turn_interrupt, { sessionId = chat.sid, turnId = chat.turn_id },
    function(err)
      if err and err.code ~= P.error_codes.TURN_NOT_FOUND then
        chat:note('> ✗ interrupt failed: ' .. err.message)
      end
    end)
  return true
end

--- Draw a session's history into `chat` (its turns, its last plan), then the turn running
--- as this client joined (protocol 1.15): its notifications so far go through the same
--- handlers as live ones, and its live notifications follow.
---@param chat turnstoned.Chat
---@param result turnstoned.SessionResumeResult
local function load(chat, result)
  chat:load(result.items or {})
  M.remember_turns(chat, result.items)
  local events = type(result.running) == 'table' and result.running.events or {}
  local replanned = vim.iter(events):any(function(e)
    return e.method == methods.plan_updated
  end)
  -- The session's plan is the running turn's when that turn made one: it is replayed there.
  plan.resumed(chat, not replanned and result.plan or nil, M.last_turn(result.items))
  for _, e in ipairs(events) do
    client.dispatch(e.method, e.params)
  end
end

--- Show a session: its loaded chat, or its history redrawn from the daemon.
---@param sid string
---@param cb? fun(err?: string, chat?: turnstoned.Chat)
function M.resume(sid, cb)
  cb = cb or function() end
  client.request(methods.session_resume, { sessionId = sid }, function(err, result)
    if err then
      return cb(err.message)
    end
    local chat = chats[sid]
    local fresh = not chat or not vim.api.nvim_buf_is_valid(chat.buf)
    if fresh then
      chat = Chat.new(sid)
      chats[sid] = chat
    end
    chat.instructions = result.instructions or chat.instructions
    chat.info = result.session
    chat.mode = result.session and result.session.approvalMode or chat.mode
    -- A live session's info may still name the model it started with after session/setModel:
    -- what this chat was told by setModel stands.
    chat.model = result.session and result.session.model or chat.model
    if fresh then
      load(chat, result)
    else
      M.remember_turns(chat, result.items)
      if result.plan and #result.plan > 0 and not chat.plan then
        plan.resumed(chat, result.plan, M.last_turn(result.items))
      end
    end
    learn_default_model(chat)
    chat.title = chat.title or (result.session and result.session.title)
    if result.session and result.session.status == 'running' and not chat.running then
      chat.running = true
      working(chat)
    end
    current = chat
    cb(nil, chat)
  end)
end

--- Compact the current chat's context now (`session/compact`); `cb(err, result)`.
---@param cb fun(err?: string, result?: turnstoned.SessionCompactResult)
function M.compact(cb)
  local chat = current
  if not (chat and chat.sid) then
    return cb('this chat has no session yet')
  end
  client.request(methods.session_compact, { sessionId = chat.sid }, function(err, result)
    cb(err and err.message, result)
  end)
end

--- Set the approval mode of the current chat's session (`session/setMode`); before the
--- session starts, the mode it starts in. `cb(err, result)`.
---@param mode turnstoned.ApprovalMode
---@param cb fun(err?: string, result?: turnstoned.SessionSetModeResult)
function M.set_mode(mode, cb)
  local chat = M.current()
  if not chat.sid then
    local previous = M.mode(chat)
    chat.mode = mode
    refresh()
    return cb(nil, { mode = mode, previous = previous })
  end
  client.request(methods.session_set_mode, { sessionId = chat.sid, mode = mode }, function(err, result)
    if err then
      return cb(err.message)
    end
    chat.mode = result.mode
    refresh()
    cb(nil, result)
  end)
end

--- Give the current chat's session its own model (`session/setModel`); before the session
--- starts, the model it starts with. `cb(err, result)`.
---@param model string
---@param cb fun(err?: string, result?: turnstoned.SessionSetModelResult)
function M.set_model(model, cb)
  local chat = M.current()
  if not chat.sid then
    local previous = chat.model
    chat.model = model
    refresh()
    return cb(nil, { model = model, previous = previous })
  end
  client.request(methods.session_set_model, { sessionId = chat.sid, model = model }, function(err, result)
    if err then
      return cb(err.message)
    end
    chat.model = result.model
    refresh()
    cb(nil, result)
  end)
end

--- The model a chat's session uses (its own, or the daemon's), when known.
---@param chat? turnstoned.Chat
---@return string?
function M.model(chat)
  return chat and (chat.model or chat.default_model) or nil
end

--- The turn the last prompt of a session's history started.
---@param items? turnstoned.Item[]
---@return string?
function M.last_turn(items)
  for i = #(items or {}), 1, -1 do
    local item = items[i]
    if item.type == 'userMessage' and type(item.turnId) == 'string' then
      return item.turnId
    end
  end
end

--- Redraw a chat from its session's history (after an undo or redo moved the conversation).
---@param chat turnstoned.Chat
---@param cb? fun(err?: string)
function M.redraw(chat, cb)
  client.request(methods.session_resume, { sessionId = chat.sid }, function(err, result)
    if err then
      return cb and cb(err.message)
    end
    chat.info = result.session or chat.info
    chat.instructions = result.instructions or chat.instructions
    load(chat, result)
    refresh()
    return cb and cb(nil)
  end)
end

--- Show `chat` as the current one (a fork the user continues in).
---@param chat turnstoned.Chat
function M.adopt(chat)
  chats[chat.sid] = chat
  current = chat
end

--- Leave the current chat; the next prompt starts a new session.
---@return turnstoned.Chat
function M.new()
  current = Chat.new(nil)
  return current
end

return M
