--- One session's transcript: a read-only markdown buffer that items stream into.
---
--- Messages are paragraphs; tool calls and reasoning are folded blocks (the header line
--- stays visible with the call's status as virtual text); the running turn's state is a
--- virtual line under the last line. Nothing here moves a cursor or a window.
local tb = require('turnstoned.textbuf')

local api = vim.api

---@class turnstoned.ChatItem
---@field type string
---@field block turnstoned.Block
---@field status? string      a tool call's status, or 'approval' while it is asked about
---@field has_output? boolean a tool call's output fence is open
---@field status_mark? integer
---@field agent? boolean      a task agent's item

---@class turnstoned.Chat
---@field sid? string          the session, once started
---@field buf integer
---@field items table<string, turnstoned.ChatItem>  by item id
---@field turn_id? string
---@field running boolean
---@field answering boolean    the assistant heading of this turn is written
---@field prompt_pending? boolean a prompt was sent and its turn has not started
---@field info? turnstoned.SessionInfo
---@field usage? turnstoned.Usage      the last turn's token counts
---@field context? {tokens: integer, window: integer}
---@field working_mark? integer
---@field turns_completed? integer
---@field previews? turnstoned.PreviewOpen[]  what the model opened with open_preview
---@field mode? turnstoned.ApprovalMode  the session's approval mode (before it starts: the one it starts in)
---@field turns? turnstoned.TurnRecord[]  the turns seen here, oldest first
---@field undos? {id: string, rewound?: boolean, redone?: boolean}[]  undos made here
---@field own_undo? boolean     an undo or redo asked from here is under way
---@field instructions? turnstoned.InstructionFile[]  the project instruction files the model reads
---@field model? string         the session's own model (before it starts: the one it starts with)
---@field default_model? string the daemon's model, which a session without its own uses
---@field attachments? turnstoned.Attachment[]  pictures that go with the next prompt
---@field plan? {turn?: string, block: turnstoned.Block}  the checklist shown last
---@field plan_anchor? {turn?: string, mark: integer}  the line the running turn's plan goes under
---@field prompt_end? integer   mark on the last line of the last prompt
---@field commands? turnstoned.SessionCommand[]  the session's slash commands, as last listed
local Chat = {}
Chat.__index = Chat

local FENCE = '````'
local USER_HEADING = '## You'
local ASSISTANT_HEADING = '## turnstoned'

---@type table<string, {[1]: string, [2]: string}>
local STATUS = {
  pending = { '… pending', 'TurnstonedPending' },
  approval = { '⏸ awaiting approval', 'TurnstonedApproval' },
  running = { '⟳ running', 'TurnstonedRunning' },
  completed = { '✓ done', 'TurnstonedOk' },
  failed = { '✗ failed', 'TurnstonedError' },
  declined = { '⊘ declined', 'TurnstonedWarn' },
  cancelled = { '⊘ cancelled', 'TurnstonedWarn' },
}

---@param name string
---@return integer
local function new_buffer(name)
  local buf = api.nvim_create_buf(false, true)
  api.nvim_buf_set_name(buf, name)
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].swapfile = false
  vim.bo[buf].undolevels = -1
  vim.bo[buf].filetype = 'markdown'
  vim.bo[buf].modifiable = false
  return buf
end

local counter = 0

--- A transcript buffer, for a session that may not exist yet.
---@param sid? string
---@return turnstoned.Chat
function Chat.new(sid)
  counter = counter + 1
  local name = ('turnstoned://chat/%s'):format(sid and sid:sub(1, 12) or ('new-' .. counter))
  local self = setmetatable({ sid = sid, items = {}, running = false, answering = false }, Chat)
  self.buf = new_buffer(name)
  vim.b[self.buf].turnstoned_chat = true
  return self
end

--- Name the buffer after its session once it has one.
---@param sid string
function Chat:bind(sid)
  self.sid = sid
  pcall(api.nvim_buf_set_name, self.buf, 'turnstoned://chat/' .. sid:sub(1, 12))
end

---@param fn fun()
function Chat:edit(fn)
  tb.edit(self.buf, require('turnstoned.config').get().auto_scroll, fn)
  self:place_working()
end

---@param text string
---@return string[]
local function lines_of(text)
  return vim.split(text or '', '\n', { plain = true })
end

--- The user's prompt, as sent; returns the mark of its heading (for `Chat:user_note`).
--- `pictures` are the names of the images sent with it ('' for one without a name).
---@param text string
---@param note? string shown after the heading (e.g. queued)
---@param pictures? string[]
---@return integer mark
function Chat:user(text, note, pictures)
  self.answering = false
  local mark
  self:edit(function()
    local lines = { USER_HEADING, '', unpack(lines_of(text)) }
    for _, name in ipairs(pictures or {}) do
      lines[#lines + 1] = name ~= '' and ('[image: %s]'):format(name) or '[image]'
    end
    local row = tb.append_paragraph(self.buf, lines)
    mark = api.nvim_buf_set_extmark(self.buf, tb.status_ns, row, 0, {})
    -- Where this prompt ends: a plan of the turn it starts goes under it.
    self.prompt_end = tb.mark(self.buf, row + #lines - 1, 0, false)
  end)
  if note then
    self:user_note(mark, note)
  end
  return mark
end

--- A prompt as an item (from history, or one another client sent): its text and pictures.
---@param item turnstoned.UserMessageItem
---@param note? string shown after the heading
---@return integer mark
function Chat:user_item(item, note)
  local pictures = vim.tbl_map(function()
    return ''
  end, type(item.images) == 'table' and item.images or {})
  return self:user(item.text or '', note, pictures)
end

--- Say something after a prompt's heading (that it was queued).
---@param mark integer
---@param note string
function Chat:user_note(mark, note)
  local row = api.nvim_buf_get_extmark_by_id(self.buf, tb.status_ns, mark, {})[1]
  if row then
    api.nvim_buf_set_extmark(self.buf, tb.status_ns, row, 0,
      { id = mark, virt_text = { { note, 'TurnstonedPending' } } })
  end
end

function Chat:heading()
  if not self.answering then
    self.answering = true
    tb.append_paragraph(self.buf, { ASSISTANT_HEADING })
  end
end

---@param item turnstoned.ChatItem
---@param status string
function Chat:set_status(item, status)
  item.status = status
  local shown = STATUS[status] or { status, 'TurnstonedPending' }
  local row = tb.pos(self.buf, item.block.start)
  item.status_mark = api.nvim_buf_set_extmark(self.buf, tb.status_ns, row, 0, {
    id = item.status_mark,
    virt_text = { { '  ' .. shown[1], shown[2] } },
    virt_text_pos = 'eol',
  })
end

---@param item turnstoned.ToolCallItem
---@return string
local function preview_lang(item)
  local preview = item.preview or ''
  if preview:match('^%-%-%- ') or preview:match('\n@@ ') or preview:match('^@@ ') then
    return 'diff'
  end
  return item.tool == 'bash' and 'sh' or 'text'
end

--- What the model asked for, when the user edited a call: the command, or the JSON.
---@param item turnstoned.ToolCallItem
---@return string?
local function original(item)
  local raw = item.originalArguments
  if type(raw) ~= 'string' then
    return nil
  end
  local ok, args = pcall(vim.json.decode, raw)
  return ok and type(args) == 'table' and type(args.command) == 'string' and args.command or raw
end

--- A tool call's lines: header, what decided it, its preview fenced, then its output fenced.
---@param item turnstoned.ToolCallItem
---@param output? string
---@return string[]
local function tool_lines(item, output)
  local header = (item.header ~= nil and item.header ~= '') and item.header or ('⚙ ' .. item.tool)
  local verdicts = require('turnstoned.verdicts')
  local out = { (header:gsub('\n', ' ')) .. verdicts.badge(item.sandbox) }
  vim.list_extend(out, verdicts.card(item, original(item)))
  local preview = item.preview or ''
  if preview ~= '' and preview ~= header:gsub('^⚙ [^:]*: ', '') then
    vim.list_extend(out, { FENCE .. preview_lang(item), unpack(lines_of(preview)) })
    out[#out + 1] = FENCE
  end
  if output and output ~= '' then
    vim.list_extend(out, { FENCE .. 'text', unpack(lines_of((output:gsub('\n$', '')))) })
    out[#out + 1] = FENCE
  end
  return out
end

---@param id string
---@param kind string
---@param lines string[]
---@param fold boolean
---@return turnstoned.ChatItem
function Chat:add_block(id, kind, lines, fold)
  self:heading()
  return self:place_block(id, kind, lines, fold)
end

--- A block of lines (folded under its first when `fold` and `fold_tools` say so).
---@param id string
---@param kind string
---@param lines string[]
---@param fold boolean
---@return turnstoned.ChatItem
function Chat:place_block(id, kind, lines, fold)
  local row = tb.paragraph_row(self.buf)
  local item = { type = kind }
  local fold_on = fold and require('turnstoned.config').get().fold_tools
  item.block = tb.block(self.buf, row, row + #lines - 1, fold_on, function()
    return (STATUS[item.status] or { item.status or '' })[1]
  end, function()
    tb.append_paragraph(self.buf, lines)
  end)
  self.items[id] = item
  return item
end

--- Rewrite a block's lines, keeping its header line (and so its fold) when that is unchanged.
---@param b turnstoned.Block
---@param lines string[]
function Chat:replace(b, lines)
  local first, last = tb.range(self.buf, b)
  local skip = api.nvim_buf_get_lines(self.buf, first, first + 1, false)[1] == lines[1] and 1 or 0
  tb.reshape(self.buf, b, first, first + #lines - 1, function()
    api.nvim_buf_set_lines(self.buf, first + skip, last + 1, false, { unpack(lines, skip + 1) })
  end)
end

local AGENT = '↳ ' -- marks what a task agent (a sub-agent of a task_agent call) did

--- A message's or reasoning's lines, and whether they fold: the session's own messages are
--- paragraphs, reasoning and a task agent's messages fold under a header.
---@param item turnstoned.Item
---@param agent boolean
---@return string[] lines, boolean fold
local function text_lines(item, agent)
  local text = lines_of(item.text or '')
  if item.type == 'reasoning' then
    return { (agent and AGENT or '') .. '💭 Reasoning', unpack(text) }, true
  elseif agent then
    return { AGENT .. 'agent', unpack(text) }, true
  end
  return text, false
end

---@param item turnstoned.ToolCallItem
---@param agent boolean
---@param output? string
---@return string[]
local function call_lines(item, agent, output)
  local lines = tool_lines(item, output)
  lines[1] = (agent and AGENT or '') .. lines[1]
  return lines
end

--- An item began (or, from history, arrived whole). `parent_call_id` names the task_agent
--- call whose agent produced it.
---@param item turnstoned.Item
---@param parent_call_id? string
function Chat:item_started(item, parent_call_id)
  if item.type == 'userMessage' then
    self:user_item(item, item.queued and '  queued: the next prompt brings it along' or nil)
    return
  elseif item.type == 'notice' then
    return require('turnstoned.notices').item(self, item)
  end
  local agent = parent_call_id ~= nil
  self:edit(function()
    if item.type == 'agentMessage' or item.type == 'reasoning' then
      local lines, fold = text_lines(item, agent)
      self:add_block(item.id, item.type, lines, fold).agent = agent
    elseif item.type == 'toolCall' then
      local entry = self:add_block(item.id, item.type, call_lines(item, agent), true)
      entry.agent = agent
      self:set_status(entry, item.status)
    end
  end)
end

--- A session event: a block of its own (the next answer starts under a new heading).
---@param id string
---@param lines string[] a header, then what folds under it
function Chat:event_block(id, lines)
  self:edit(function()
    self:place_block(id, 'notice', lines, #lines > 1)
  end)
  self.answering = false
end

--- The project instruction files the model reads, as the winbar names them: "AGENTS.md,
--- src/AGENTS.md (truncated)" ('' when there are none or they are not known).
---@return string
function Chat:instructions_label()
  local names = {}
  for _, f in ipairs(type(self.instructions) == 'table' and self.instructions or {}) do
    if type(f.path) == 'string' then
      local rel = self:relative(f.path)
      names[#names + 1] = (rel == f.path and vim.fn.fnamemodify(f.path, ':~') or rel)
        .. (f.truncated and ' (truncated)' or '')
    end
  end
  return table.concat(names, ', ')
end

local KIND = { create = 'created ', modify = 'modified', delete = 'deleted ' }
local LISTED = 20 -- files named in a changes block

--- `path` relative to the session's directory when it is inside it.
---@param path string
---@return string
function Chat:relative(path)
  local dir = self.info and self.info.cwd
  return dir and vim.startswith(path, dir .. '/') and path:sub(#dir + 2) or path
end

--- The end of a turn that changed files: which, and how to review or take them back.
---@param turn_id string
---@param cp turnstoned.TurnCheckpoint
function Chat:changes_block(turn_id, cp)
  local files = cp.files or {}
  if #files == 0 and cp.undoable ~= false then
    return
  end
  local count = #files == 1 and '1 file' or ('%d files'):format(#files)
  local lines = { ('📝 changes in this turn: %s (:Turnstoned changes · undo)'):format(count) }
  if cp.undoable == false then
    local why = type(cp.note) == 'string' and cp.note or 'no checkpoint'
    lines[1] = #files == 0 and ("📝 this turn's changes cannot be undone: " .. why)
      or ('📝 changes in this turn: %s · cannot be undone: %s'):format(count, why)
  end
  for i, f in ipairs(files) do
    if i > LISTED then
      lines[#lines + 1] = ('  … and %d more'):format(#files - LISTED)
      break
    end
    lines[#lines + 1] = ('  %s  %s%s'):format(KIND[f.kind] or f.kind, self:relative(f.path),
      f.binary and ' (binary)' or '')
  end
  self:edit(function()
    self:place_block('changes-' .. turn_id, 'changes', lines, false)
  end)
  self.answering = false
end

--- Streamed text of a message or of reasoning.
---@param item_id string
---@param text string
function Chat:delta(item_id, text)
  local item = self.items[item_id]
  if item then
    self:edit(function()
      tb.insert_at(self.buf, item.block.stop, text)
    end)
  end
end

--- Streamed output of a running tool call, inside its folded block.
---@param item_id string
---@param chunk string
function Chat:tool_output(item_id, chunk)
  local item = self.items[item_id]
  if not item or chunk == '' then
    return
  end
  if item.status ~= 'running' then
    self:set_status(item, 'running')
  end
  local pieces = lines_of(chunk)
  self:edit(function()
    local first, last = tb.range(self.buf, item.block)
    if not item.has_output then
      item.has_output = true
      local lines = { FENCE .. 'text', unpack(pieces) }
      lines[#lines + 1] = FENCE
      return tb.reshape(self.buf, item.block, first, last + #lines, function()
        api.nvim_buf_set_lines(self.buf, last + 1, last + 1, false, lines)
      end)
    end
    local current = api.nvim_buf_get_lines(self.buf, last - 1, last, false)[1]
    pieces[1] = current .. pieces[1]
    api.nvim_buf_set_lines(self.buf, last - 1, last, false, pieces)
  end)
end

--- An item's final state (authoritative): the text and output the model has.
---@param item turnstoned.Item
---@param parent_call_id? string
function Chat:item_completed(item, parent_call_id)
  local entry = self.items[item.id]
  if not entry then
    self:item_started(item, parent_call_id)
    entry = self.items[item.id]
    if not entry or item.type ~= 'toolCall' then
      return
    end
  end
  self:edit(function()
    if item.type == 'agentMessage' or item.type == 'reasoning' then
      self:replace(entry.block, (text_lines(item, entry.agent)))
    elseif item.type == 'toolCall' then
      self:replace(entry.block, call_lines(item, entry.agent, item.output))
      entry.has_output = item.output ~= nil and item.output ~= ''
      self:set_status(entry, item.status)
    end
  end)
end

--- Mark the calls of an approval cycle as waiting for the user, or as decided.
---@param call_ids string[]
---@param status string a status of STATUS
function Chat:calls_status(call_ids, status)
  for _, id in ipairs(call_ids) do
    local entry = self.items[id]
    if entry and entry.type == 'toolCall' then
      self:set_status(entry, status)
    end
  end
end

--- The running turn's virtual line under the transcript (`nil` removes it).
---@param text? string
function Chat:working(text)
  self.working_text = text
  self:place_working()
end

function Chat:place_working()
  if not self.working_text then
    if self.working_mark then
      api.nvim_buf_del_extmark(self.buf, tb.status_ns, self.working_mark)
      self.working_mark = nil
    end
    return
  end
  local last = api.nvim_buf_line_count(self.buf) - 1
  self.working_mark = api.nvim_buf_set_extmark(self.buf, tb.status_ns, last, 0, {
    id = self.working_mark,
    virt_lines = { { { '⟳ ' .. self.working_text, 'TurnstonedWorking' } } },
  })
end

--- A note in the transcript (a turn's end, an error).
---@param text string
function Chat:note(text)
  self:edit(function()
    tb.append_paragraph(self.buf, lines_of(text))
  end)
end

--- Redraw the whole transcript from a session's history.
---@param items turnstoned.Item[]
function Chat:load(items)
  tb.reset(self.buf)
  self.items, self.working_mark, self.answering = {}, nil, false
  self:edit(function()
    api.nvim_buf_set_lines(self.buf, 0, -1, false, {})
  end)
  for _, item in ipairs(items) do
    self:item_completed(item)
  end
end

return Chat
