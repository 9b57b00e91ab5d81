--- What turns changed in the workspace, and taking it back: `:Turnstoned changes` (a list
--- of the last turn's files: a file's diff, keep it, undo it), `:Turnstoned undo` and
--- `redo` (whole turns, with a question per file you changed since), and `:Turnstoned
--- rerun` (an earlier prompt again, edited, in this chat rewound or in a fork).
local Chat = require('turnstoned.chat')
local client = require('turnstoned.client')
local config = require('turnstoned.config')
local P = require('turnstoned.protocol')
local session = require('turnstoned.session')

local api = vim.api
local methods = P.methods
local M = {}

---@param msg string
---@param level? integer
local function notify(msg, level)
  vim.notify('turnstoned: ' .. msg, level or vim.log.levels.INFO)
end

---@param text? string
---@return string
local function first_line(text)
  local line = vim.split(text or '', '\n', { plain = true })[1] or ''
  return #line > 60 and (line:sub(1, 57) .. '...') or line
end

--- The current chat, when it has a session and no running turn (else nil, and why).
---@return turnstoned.Chat?
local function idle_chat()
  local chat = session.peek()
  if not (chat and chat.sid) then
    notify('this chat has no session yet')
    return nil
  elseif chat.running then
    notify('a turn is running: interrupt it (or wait for it to end) first', vim.log.levels.WARN)
    return nil
  end
  return chat
end

--- The chat's last turn that changed files and was not undone, among those whose changes
--- are known.
---@param chat turnstoned.Chat
---@return turnstoned.TurnRecord?
function M.last_changed(chat)
  for i = #(chat.turns or {}), 1, -1 do
    local t = chat.turns[i]
    if not t.undone and t.checkpoint and #(t.checkpoint.files or {}) > 0 then
      return t
    end
  end
end

--- Remember that an undo (made before this chat was resumed) took `turn` back, so it is not
--- offered again and redo can bring it back.
---@param chat turnstoned.Chat
---@param turn turnstoned.TurnRecord
---@param undo_id string
local function undone_before(chat, turn, undo_id)
  turn.undone = undo_id
  chat.undos = chat.undos or {}
  for _, u in ipairs(chat.undos) do
    if u.id == undo_id then
      return
    end
  end
  table.insert(chat.undos, 1, { id = undo_id })
end

--- Walk the chat's turns from the last back until `pred(turn)` holds; `cb(turn)` (nil: none
--- did). A turn known only from the session's history (a resumed session) is first asked
--- what it changed and whether an undo took it back (`turn/changes`). At most `limit`
--- turns are asked.
---@param chat turnstoned.Chat
---@param pred fun(turn: turnstoned.TurnRecord): boolean
---@param cb fun(turn?: turnstoned.TurnRecord)
---@param limit? integer
local function scan(chat, pred, cb, limit)
  local i, asked = #(chat.turns or {}) + 1, 0
  local function step()
    i = i - 1
    local t = (chat.turns or {})[i]
    if not t then
      return cb(nil)
    elseif t.checkpoint or not t.resumed then
      if pred(t) then
        return cb(t)
      end
      return step()
    elseif limit and asked >= limit then
      return cb(nil)
    end
    asked = asked + 1
    client.request(methods.turn_changes, { sessionId = chat.sid, turnId = t.id }, function(err, result)
      if err then
        t.checkpoint = { files = {} }
      else
        t.checkpoint = { files = result.files or {}, undoable = result.undoable, note = result.note }
        if type(result.undoneBy) == 'string' and not t.undone then
          undone_before(chat, t, result.undoneBy)
        end
      end
      i = i + 1 -- look at this turn again, now that its changes are known
      step()
    end)
  end
  step()
end

--- The chat's last turn that changed files and was not undone; `cb(turn)` (nil: none).
---@param chat turnstoned.Chat
---@param cb fun(turn?: turnstoned.TurnRecord)
function M.find_last_changed(chat, cb)
  scan(chat, function(t)
    return not t.undone and t.checkpoint ~= nil and #(t.checkpoint.files or {}) > 0
  end, cb)
end

--- How many of the chat's live turns come after `turn`.
---@param chat turnstoned.Chat
---@param turn turnstoned.TurnRecord
---@return integer
local function turns_after(chat, turn)
  local n, seen = 0, false
  for _, t in ipairs(chat.turns or {}) do
    if seen and not t.undone then
      n = n + 1
    end
    seen = seen or t == turn
  end
  return n
end

-- ---------------------------------------------------------------- conflicts

---@param title string
---@param lines string[]
---@param filetype string
---@return integer buf
local function scratch(title, lines, filetype)
  local buf = api.nvim_create_buf(false, true)
  pcall(api.nvim_buf_set_name, buf, title)
  vim.bo[buf].buftype, vim.bo[buf].bufhidden, vim.bo[buf].swapfile = 'nofile', 'wipe', false
  api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].filetype = filetype
  return buf
end

---@param chat turnstoned.Chat
---@param c turnstoned.UndoConflict
local function show_conflict(chat, c)
  local rel = chat:relative(c.path)
  local lines = vim.split(c.diff or '', '\n', { plain = true })
  if c.truncated then
    lines[#lines + 1] = '... (the diff is cut here)'
  end
  local buf = scratch('turnstoned://conflict/' .. rel, lines, 'diff')
  vim.cmd('botright split')
  api.nvim_win_set_buf(0, buf)
  vim.wo[0][0].winbar = (' what you changed in %s since the turn did'):format(rel:gsub('%%', '%%%%'))
  local close = config.get().keymaps.close
  if close then
    vim.keymap.set('n', close, '<Cmd>close<CR>', { buffer = buf, nowait = true, desc = 'turnstoned: close' })
  end
end

--- Ask about each file you changed after the agent did: keep yours, or take the
--- checkpoint's. `on_done(resolutions)` by absolute path; nil when a question was dismissed.
---@param chat turnstoned.Chat
---@param conflicts turnstoned.UndoConflict[]
---@param on_done fun(resolutions?: table<string, turnstoned.Resolution>)
function M.resolve(chat, conflicts, on_done)
  local out, i = {}, 1
  local choices = {
    { id = 'mine', label = 'Keep mine (the file stays as you have it)' },
    { id = 'checkpoint', label = 'Take the checkpoint (your change to it is lost)' },
    { id = 'diff', label = 'Show diff (what you changed since)…' },
  }
  local function step()
    local c = conflicts[i]
    if not c then
      return on_done(out)
    end
    vim.ui.select(choices, {
      prompt = ('You changed %s after the turn did'):format(chat:relative(c.path)),
      kind = 'turnstoned.conflict',
      format_item = function(choice)
        return choice.label
      end,
    }, function(choice)
      vim.schedule(function()
        if not choice then
          return on_done(nil)
        elseif choice.id == 'diff' then
          show_conflict(chat, c)
          return step()
        end
        out[c.path] = choice.id
        i = i + 1
        step()
      end)
    end)
  end
  step()
end

--- Send an undo-like request (turn/undo, turn/redo, session/fork); while the answer names
--- conflicts, ask about them and send it again with the resolutions. `on_done(result)` once
--- it was applied (nil: it failed or was given up; the user was told).
---@param chat turnstoned.Chat
---@param method string
---@param params table
---@param on_done fun(result?: table)
local function settle(chat, method, params, on_done)
  chat.own_undo = true -- the daemon's undo notice is for the others: this answer says it all
  client.request(method, params, function(err, result)
    chat.own_undo = false
    if err then
      local said = err.code == P.error_codes.TURN_RUNNING
          and 'a turn is running: interrupt it (or wait for it to end) first'
        or err.code == P.error_codes.CHECKPOINT_NOT_FOUND and ('nothing to take back: ' .. err.message)
        or err.message
      notify(said, vim.log.levels.WARN)
      return on_done(nil)
    end
    local undo = method == methods.session_fork and result.undo or result
    if undo and undo.applied == false then
      return M.resolve(chat, undo.conflicts or {}, function(resolutions)
        if not resolutions then
          notify('nothing was changed')
          return on_done(nil)
        end
        params.resolutions = vim.tbl_extend('force', params.resolutions or {}, resolutions)
        settle(chat, method, params, on_done)
      end)
    end
    on_done(result)
  end)
end

---@param chat turnstoned.Chat
---@param paths string[]
---@return string
local function names(chat, paths)
  local shown = vim.tbl_map(function(p)
    return chat:relative(p)
  end, vim.list_slice(paths, 1, 10))
  return table.concat(shown, ', ') .. (#paths > 10 and (' and %d more'):format(#paths - 10) or '')
end

--- What an undo or redo did, as one transcript line.
---@param chat turnstoned.Chat
---@param verb string
---@param result turnstoned.TurnUndoResult
---@return string
local function summary(chat, verb, result)
  local restored = vim.tbl_map(function(f)
    return f.path
  end, result.restored or {})
  local turns = #(result.turnIds or {})
  local what = turns == 1 and 'the last turn' or ('%d turns'):format(turns)
  local line = ('> %s %s: '):format(verb, what)
    .. (#restored > 0 and ('restored ' .. names(chat, restored)) or 'no file needed restoring')
  if #(result.kept or {}) > 0 then
    line = line .. '; kept yours: ' .. names(chat, result.kept)
  end
  if result.rewound then
    line = line .. (verb:find('undid', 1, true) and '; the conversation went back too'
      or '; the conversation came back too')
  end
  return line
end

--- Remember an applied undo in the chat: its turns are undone, and redo can take it back.
---@param chat turnstoned.Chat
---@param result turnstoned.TurnUndoResult
local function undone(chat, result)
  for _, id in ipairs(result.turnIds or {}) do
    session.turn(chat, id).undone = result.undoId or true
  end
  if result.undoId then
    chat.undos = chat.undos or {}
    table.insert(chat.undos, { id = result.undoId, rewound = result.rewound })
  end
end

--- After an undo or redo: the transcript redrawn when the conversation moved, and a line
--- saying what happened.
---@param chat turnstoned.Chat
---@param line string
---@param rewound? boolean
---@param then_fn? fun()
local function tell(chat, line, rewound, then_fn)
  local function done()
    chat:note(line)
    return then_fn and then_fn()
  end
  if rewound then
    return session.redraw(chat, done)
  end
  done()
end

-- ---------------------------------------------------------------- undo, redo

--- Undo the current chat's last turn that changed files (and the turns after it).
function M.undo()
  local chat = idle_chat()
  if not chat then
    return
  end
  M.find_last_changed(chat, function(turn)
    M.undo_turn(chat, turn)
  end)
end

--- Undo `turn` of `chat` (and the turns after it), asking whether the conversation goes too.
---@param chat turnstoned.Chat
---@param turn? turnstoned.TurnRecord
function M.undo_turn(chat, turn)
  if not turn then
    return notify('no turn of this chat changed files that can be undone')
  elseif turn.checkpoint.undoable == false then
    return notify('that turn cannot be undone: ' .. (turn.checkpoint.note or 'no checkpoint'))
  end
  local later = turns_after(chat, turn)
  local files = #turn.checkpoint.files
  local prompt = ('Undo the turn "%s" (%s%s)'):format(first_line(turn.prompt or 'started by the daemon'),
    files == 1 and '1 file' or (files .. ' files'), later > 0 and (', and the %d turns after it'):format(later) or '')
  vim.ui.select({
    { rewind = true, label = 'Rewind the conversation too (the model forgets the turn)' },
    { rewind = false, label = 'Keep the conversation (the model is told what you undid)' },
  }, {
    prompt = prompt,
    kind = 'turnstoned.undo',
    format_item = function(c)
      return c.label
    end,
  }, function(choice)
    if not choice then
      return
    end
    settle(chat, methods.turn_undo, { sessionId = chat.sid, turnId = turn.id, rewind = choice.rewind },
      function(result)
        if result then
          undone(chat, result)
          tell(chat, summary(chat, '↶ undid', result) .. ' · :Turnstoned redo brings it back', result.rewound)
        end
      end)
  end)
end

--- `/undo`: `turn/undo` of the session's last turn that can be undone (no turnId: the daemon
--- knows which, also of turns from before a restart); `/undo rewind` takes the conversation
--- back too.
---@param rewind? boolean
function M.undo_last(rewind)
  local chat = idle_chat()
  if not chat then
    return
  end
  settle(chat, methods.turn_undo, { sessionId = chat.sid, rewind = rewind == true }, function(result)
    if result then
      undone(chat, result)
      tell(chat, summary(chat, '↶ undid', result) .. ' · /redo brings it back', result.rewound)
    end
  end)
end

--- `/redo`: `turn/redo` of the session's latest undo that was not redone (no undoId).
function M.redo_latest()
  local chat = idle_chat()
  if not chat then
    return
  end
  settle(chat, methods.turn_redo, { sessionId = chat.sid }, function(result)
    if not result then
      return
    end
    for _, u in ipairs(chat.undos or {}) do
      if u.id == result.undoId then
        u.redone = true
      end
    end
    for _, t in ipairs(chat.turns or {}) do
      if t.undone and t.undone == result.undoId then
        t.undone = nil
      end
    end
    tell(chat, summary(chat, '↷ redid', result), result.rewound)
  end)
end

--- Take back the current chat's last undo (in a resumed chat that knows of none, the undo
--- of its last undone turn is looked for first, among its last 20 turns).
function M.redo()
  local chat = idle_chat()
  if not chat then
    return
  end
  local known = vim.iter(chat.undos or {}):any(function(u)
    return not u.redone
  end)
  if known then
    return M.redo_last(chat)
  end
  scan(chat, function(t)
    return t.undone ~= nil
  end, function()
    M.redo_last(chat)
  end, 20)
end

--- Take back the last undo `chat` knows of.
---@param chat turnstoned.Chat
function M.redo_last(chat)
  local last
  for i = #(chat.undos or {}), 1, -1 do
    if not chat.undos[i].redone then
      last = chat.undos[i]
      break
    end
  end
  if not last then
    return notify('nothing of this chat was undone')
  end
  settle(chat, methods.turn_redo, { sessionId = chat.sid, undoId = last.id }, function(result)
    if not result then
      return
    end
    last.redone = true
    for _, t in ipairs(chat.turns or {}) do
      if t.undone == last.id then
        t.undone = nil
      end
    end
    tell(chat, summary(chat, '↷ redid', result), result.rewound)
  end)
end

-- ---------------------------------------------------------------- one file's diff

--- The file before a change, from the file as it is and the change's unified diff (taken
--- back hunk by hunk); nil when the file no longer reads as the diff left it.
---@param after string[]
---@param diff string
---@return string[]?
function M.unpatch(after, diff)
  local hunks, current = {}, nil
  for _, line in ipairs(vim.split(diff, '\n', { plain = true })) do
    local c, d = line:match('^@@ %-%d+,?%d* %+(%d+),?(%d*) @@')
    if c then
      current = { start = tonumber(c), count = d == '' and 1 or tonumber(d), old = {}, new = {} }
      table.insert(hunks, current)
    elseif current then
      local mark, text = line:sub(1, 1), line:sub(2)
      if mark == ' ' then
        table.insert(current.old, text)
        table.insert(current.new, text)
      elseif mark == '-' then
        table.insert(current.old, text)
      elseif mark == '+' then
        table.insert(current.new, text)
      end
    end
  end
  local out, offset = vim.list_extend({}, after), 0
  for _, h in ipairs(hunks) do
    local at = (h.count == 0 and h.start or h.start - 1) + offset -- 0-based
    for k, text in ipairs(h.new) do
      if out[at + k] ~= text then
        return nil
      end
    end
    local rest = vim.list_slice(out, at + #h.new + 1)
    out = vim.list_extend(vim.list_extend(vim.list_slice(out, 1, at), h.old), rest)
    offset = offset + #h.old - #h.new
  end
  return out
end

---@param path string
---@return string[]?
local function read_lines(path)
  if vim.fn.filereadable(path) == 0 then
    return nil
  end
  return vim.fn.readfile(path)
end

--- A file's diff: before the turn (left) and the file as it is (right), in a new tab.
---@param chat turnstoned.Chat
---@param file turnstoned.ChangedFile
function M.open_diff(chat, file)
  local rel = chat:relative(file.path)
  local after = read_lines(file.path)
  local before = (file.binary or file.truncated or type(file.diff) ~= 'string') and nil
    or M.unpatch(after or {}, file.diff)
  if not before then
    local lines = type(file.diff) == 'string' and vim.split(file.diff, '\n', { plain = true })
      or { file.binary and '(a binary file: no diff)' or '(no diff)' }
    vim.cmd.tabnew()
    local empty = api.nvim_get_current_buf()
    api.nvim_win_set_buf(0, scratch('turnstoned://diff/' .. rel, lines, 'diff'))
    pcall(api.nvim_buf_delete, empty, { force = true })
    vim.wo[0][0].winbar = (' %s: the turn\'s diff (the file changed since, or the diff is cut)'):format(
      rel:gsub('%%', '%%%%'))
    return
  end
  vim.cmd.tabnew()
  local right = api.nvim_get_current_win()
  if after then
    vim.cmd.edit(vim.fn.fnameescape(file.path))
  else
    api.nvim_win_set_buf(right, scratch('turnstoned://deleted/' .. rel, {}, ''))
  end
  local ft = vim.filetype.match({ filename = file.path }) or ''
  local left = api.nvim_open_win(scratch('turnstoned://before/' .. rel, before, ft), false,
    { split = 'left', win = right })
  local escaped = rel:gsub('%%', '%%%%')
  vim.wo[left][0].winbar = ' before the turn: ' .. escaped
  vim.wo[right][0].winbar = (after and ' now: ' or ' now: deleted: ') .. escaped
  for _, win in ipairs({ left, right }) do
    api.nvim_win_call(win, function()
      vim.cmd.diffthis()
    end)
  end
  local close = config.get().keymaps.close
  if close then
    vim.keymap.set('n', close, '<Cmd>tabclose<CR>', { buffer = api.nvim_win_get_buf(left), nowait = true,
      desc = 'turnstoned: close this diff' })
  end
end

-- ---------------------------------------------------------------- the changes list

---@class turnstoned.ChangesList
---@field chat turnstoned.Chat
---@field turn turnstoned.TurnRecord
---@field files turnstoned.ChangedFile[]
---@field state table<string, string>  by path: 'kept', 'undone', 'yours'
---@field buf integer
---@field first integer  row (1-based) of the first file

local list_ns = api.nvim_create_namespace('turnstoned.changes')
local KIND = { create = 'created ', modify = 'modified', delete = 'deleted ' }
local STATE = { kept = { '✓ kept', 'TurnstonedOk' }, undone = { '↶ undone', 'TurnstonedWarn' },
  yours = { '✓ yours kept', 'TurnstonedOk' } }

---@param diff? string
---@return string
local function counts(diff)
  if type(diff) ~= 'string' then
    return ''
  end
  local plus, minus = 0, 0
  for _, line in ipairs(vim.split(diff, '\n', { plain = true })) do
    if line:match('^%+') and not line:match('^%+%+%+ ') then
      plus = plus + 1
    elseif line:match('^%-') and not line:match('^%-%-%- ') then
      minus = minus + 1
    end
  end
  return ('+%d −%d'):format(plus, minus)
end

---@param l turnstoned.ChangesList
local function draw(l)
  api.nvim_buf_clear_namespace(l.buf, list_ns, 0, -1)
  for i, f in ipairs(l.files) do
    local state = STATE[l.state[f.path]]
    if state then
      api.nvim_buf_set_extmark(l.buf, list_ns, l.first + i - 2, 0,
        { virt_text = { { '  ' .. state[1], state[2] } }, virt_text_pos = 'eol' })
    end
  end
end

---@param l turnstoned.ChangesList
---@return turnstoned.ChangedFile?
local function file_at_cursor(l)
  local row = api.nvim_win_get_cursor(0)[1]
  return l.files[row - l.first + 1]
end

--- Undo one file of the list's turn (the conversation stays).
---@param l turnstoned.ChangesList
---@param file turnstoned.ChangedFile
local function undo_file(l, file)
  if l.chat.running then
    return notify('a turn is running: interrupt it (or wait for it to end) first', vim.log.levels.WARN)
  end
  settle(l.chat, methods.turn_undo, { sessionId = l.chat.sid, turnId = l.turn.id, paths = { file.path } },
    function(result)
      if not result then
        return
      end
      l.state[file.path] = vim.tbl_contains(result.kept or {}, file.path) and 'yours' or 'undone'
      if result.undoId then
        l.chat.undos = l.chat.undos or {}
        table.insert(l.chat.undos, { id = result.undoId, rewound = false })
      end
      if api.nvim_buf_is_valid(l.buf) then
        draw(l)
      end
      l.chat:note((summary(l.chat, '↶ undid', result):gsub('the last turn', 'one file of the turn', 1)))
    end)
end

---@param l turnstoned.ChangesList
local function list_keymaps(l)
  local keys = config.get().keymaps
  local function map(lhs, fn, desc)
    if lhs then
      vim.keymap.set('n', lhs, function()
        local file = file_at_cursor(l)
        if file then
          fn(file)
        end
      end, { buffer = l.buf, nowait = true, desc = desc })
    end
  end
  map(keys.changes_diff, function(file)
    M.open_diff(l.chat, file)
  end, 'turnstoned: before and after of this file')
  map(keys.changes_keep, function(file)
    l.state[file.path] = 'kept'
    draw(l)
    local row = api.nvim_win_get_cursor(0)[1]
    if row < l.first + #l.files - 1 then
      api.nvim_win_set_cursor(0, { row + 1, 0 })
    end
  end, 'turnstoned: keep this file as the turn left it')
  map(keys.changes_undo, function(file)
    undo_file(l, file)
  end, "turnstoned: undo the turn's change of this file")
  if keys.close then
    vim.keymap.set('n', keys.close, '<Cmd>close<CR>', { buffer = l.buf, nowait = true,
      desc = 'turnstoned: close the list' })
  end
end

--- The list of what the current chat's last turn changed.
---@param on_open? fun(l: turnstoned.ChangesList)
function M.list(on_open)
  local chat = session.peek()
  if not (chat and chat.sid) then
    return notify('this chat has no session yet')
  end
  M.find_last_changed(chat, function(turn)
    if not turn then
      return notify('no turn of this chat changed files')
    end
    M.list_turn(chat, turn, on_open)
  end)
end

--- The list of what `turn` of `chat` changed.
---@param chat turnstoned.Chat
---@param turn turnstoned.TurnRecord
---@param on_open? fun(l: turnstoned.ChangesList)
function M.list_turn(chat, turn, on_open)
  client.request(methods.turn_changes, { sessionId = chat.sid, turnId = turn.id }, function(err, result)
    if err then
      return notify('cannot list the changes: ' .. err.message, vim.log.levels.ERROR)
    end
    local keys = config.get().keymaps
    local hint = ('%s diff · %s keep · %s undo this file · %s close'):format(keys.changes_diff or '-',
      keys.changes_keep or '-', keys.changes_undo or '-', keys.close or '-')
    local lines = { ('Changes of the turn "%s"'):format(first_line(turn.prompt or 'started by the daemon')),
      hint, '' }
    local files = result.files or {}
    for _, f in ipairs(files) do
      lines[#lines + 1] = ('%s  %s  %s%s'):format(KIND[f.kind] or f.kind, chat:relative(f.path), counts(f.diff),
        f.binary and ' (binary)' or '')
    end
    if result.undoable == false then
      lines[#lines + 1] = ''
      lines[#lines + 1] = 'These changes cannot be undone: ' .. (result.note or 'no checkpoint')
    end
    local buf = scratch(('turnstoned://changes/%s'):format(turn.id:sub(1, 12)), lines, 'turnstonedchanges')
    ---@type turnstoned.ChangesList
    local l = { chat = chat, turn = turn, files = files, state = {}, buf = buf, first = 4 }
    vim.cmd(('botright %dsplit'):format(math.min(#lines, 15)))
    api.nvim_win_set_buf(0, buf)
    vim.wo[0][0].winbar = ' turnstoned: changes%=' .. hint:gsub('%%', '%%%%') .. ' '
    if #files > 0 then
      api.nvim_win_set_cursor(0, { l.first, 0 })
    end
    list_keymaps(l)
    draw(l)
    return on_open and on_open(l)
  end)
end

-- ---------------------------------------------------------------- rerun

--- Show `chat` with `prompt` in the prompt window, ready to edit and send.
---@param chat turnstoned.Chat
---@param prompt string
local function edit_prompt(chat, prompt)
  local ui = require('turnstoned.ui')
  ui.show(chat, { focus = true })
  ui.prefill(vim.split(prompt, '\n', { plain = true }))
  local send = config.get().keymaps.send
  notify(('edit the prompt and send it%s'):format(send and (' (' .. send .. ')') or ''))
end

--- Pick an earlier prompt of the current chat, go back to before it (this chat rewound,
--- or a fork), and put it in the prompt window to edit and send.
function M.rerun()
  local chat = idle_chat()
  if not chat then
    return
  end
  local prompts = {}
  for i = #(chat.turns or {}), 1, -1 do
    local t = chat.turns[i]
    if t.prompt and not t.undone then
      prompts[#prompts + 1] = t
    end
  end
  if #prompts == 0 then
    return notify('no prompt of this chat to send again')
  end
  vim.ui.select(prompts, {
    prompt = 'Send which prompt again?',
    kind = 'turnstoned.rerun',
    format_item = function(t)
      return first_line(t.prompt)
    end,
  }, function(turn)
    if not turn then
      return
    end
    vim.schedule(function()
      M.rerun_turn(chat, turn)
    end)
  end)
end

--- Ask how to go back to before `turn`, go there, and put its prompt up for editing.
---@param chat turnstoned.Chat
---@param turn turnstoned.TurnRecord
function M.rerun_turn(chat, turn)
  vim.ui.select({
    { id = 'rewind', label = 'Rewind this chat to before it (its files and the turns after it too)' },
    { id = 'fork', label = 'Fork a new chat from before it (files stay as they are)' },
    { id = 'fork_restore', label = 'Fork a new chat from before it, and put its files back' },
  }, {
    prompt = ('Send "%s" again'):format(first_line(turn.prompt)),
    kind = 'turnstoned.rerun',
    format_item = function(c)
      return c.label
    end,
  }, function(choice)
    if not choice then
      return
    elseif choice.id == 'rewind' then
      return settle(chat, methods.turn_undo, { sessionId = chat.sid, turnId = turn.id, rewind = true },
        function(result)
          if result then
            undone(chat, result)
            tell(chat, summary(chat, '↶ undid', result) .. ' · :Turnstoned redo brings it back', result.rewound,
              function()
                edit_prompt(chat, type(result.prompt) == 'string' and result.prompt or turn.prompt)
              end)
          end
        end)
    end
    local params = { sessionId = chat.sid, turnId = turn.id, restoreFiles = choice.id == 'fork_restore' }
    settle(chat, methods.session_fork, params, function(result)
      if not (result and result.session) then
        return
      end
      if result.undo then
        undone(chat, result.undo)
      end
      local fork = Chat.new(result.session.sessionId)
      fork.info, fork.mode = result.session, result.session.approvalMode
      fork.title = result.session.title
      session.adopt(fork)
      session.redraw(fork, function()
        fork:note(('> ⑂ forked from %s before "%s"'):format(chat.sid:sub(1, 8), first_line(turn.prompt)))
        edit_prompt(fork, type(result.prompt) == 'string' and result.prompt or turn.prompt)
      end)
    end)
  end)
end

return M
