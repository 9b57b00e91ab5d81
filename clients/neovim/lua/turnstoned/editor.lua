--- What the editor shows, for the model: the editor state sent with each prompt (the file
--- the user works in, the selection or cursor, the visible lines, that file's diagnostics)
--- and the daemon's `editor/*` requests (diagnostics, open files, a symbol's definition or
--- references through the buffer's language servers, unsaved buffers).
---
--- "The file the user works in" is the window the user was last in that shows a normal
--- buffer: the chat and prompt windows, floating windows and special buffers (help,
--- quickfix, terminals) do not count, so a prompt sent from the prompt window speaks of the
--- window the user came from.
local config = require('turnstoned.config')
local log = require('turnstoned.log')

local api = vim.api
local M = {}

local MAX_DIAGNOSTICS = 500 -- of every file, answering editor/diagnostics without a path
local SYMBOL_TIMEOUT_MS = 6000 -- the daemon waits 10 s
local ATTACH_WAIT_MS = 2000 -- for language servers to attach to a buffer loaded to ask them
local RECENT = 10 -- windows remembered, most recent first

-- ---------------------------------------------------------------- positions and paths

local new_utf = vim.fn.has('nvim-0.11') == 1

--- The UTF-16 index of byte `byte` (from 0) of `line`: LSP's character.
---@param line string
---@param byte integer
---@return integer
function M.utf16(line, byte)
  byte = math.max(0, math.min(byte, #line))
  if new_utf then
    return vim.str_utfindex(line, 'utf-16', byte, false)
  end
  local ok, _, u16 = pcall(vim.str_utfindex, line, byte)
  return ok and u16 or byte
end

--- The byte (from 0) of UTF-16 index `character` of `line`.
---@param line string
---@param character integer
---@return integer
function M.byte(line, character)
  if new_utf then
    return vim.str_byteindex(line, 'utf-16', math.max(0, character), false)
  end
  local ok, b = pcall(vim.str_byteindex, line, math.max(0, character), true)
  return ok and b or math.min(character, #line)
end

---@param buf integer
---@param row integer from 0
---@return string
local function line_at(buf, row)
  return api.nvim_buf_get_lines(buf, row, row + 1, false)[1] or ''
end

--- The file of a buffer (absolute, symlinks resolved), or nil when it has none: no name,
--- or a special buffer ('buftype' set).
---@param buf integer
---@return string?
function M.path(buf)
  if not api.nvim_buf_is_valid(buf) or vim.bo[buf].buftype ~= '' then
    return nil
  end
  local name = api.nvim_buf_get_name(buf)
  if name == '' or name:match('^%a[%w+.-]*://') then
    return nil
  end
  local abs = vim.fs.normalize(vim.fn.fnamemodify(name, ':p'))
  return vim.uv.fs_realpath(abs) or abs
end

--- The loaded buffer of a file, if there is one.
---@param path string absolute
---@return integer?
function M.find_buf(path)
  local want = vim.uv.fs_realpath(path) or vim.fs.normalize(path)
  for _, buf in ipairs(api.nvim_list_bufs()) do
    if api.nvim_buf_is_loaded(buf) and M.path(buf) == want then
      return buf
    end
  end
end

-- ---------------------------------------------------------------- the window the user is in

local recent = {} ---@type integer[]

--- Whether `win` is a window the user edits in (not a chat, prompt, float or special buffer).
---@param win integer
---@return boolean
local function editing(win)
  if not api.nvim_win_is_valid(win) or api.nvim_win_get_config(win).relative ~= '' then
    return false
  end
  local buf = api.nvim_win_get_buf(win)
  return vim.bo[buf].buftype == '' and not vim.b[buf].turnstoned_chat
end

--- Remember the current window when it is one the user edits in.
function M.note_window()
  local win = api.nvim_get_current_win()
  if not editing(win) then
    return
  end
  for i = #recent, 1, -1 do
    if recent[i] == win or not api.nvim_win_is_valid(recent[i]) then
      table.remove(recent, i)
    end
  end
  table.insert(recent, 1, win)
  recent[RECENT + 1] = nil
end

--- The window the user works in: the current one when it is an editing window, else the
--- last editing window they were in (of this tabpage first).
---@return integer?
function M.active_win()
  local cur = api.nvim_get_current_win()
  if editing(cur) then
    return cur
  end
  local tab = api.nvim_get_current_tabpage()
  local other
  for _, win in ipairs(recent) do
    if editing(win) then
      if api.nvim_win_get_tabpage(win) == tab then
        return win
      end
      other = other or win
    end
  end
  return other
end

--- The buffer of the window the user works in.
---@return integer?
function M.active_buf()
  local win = M.active_win()
  return win and api.nvim_win_get_buf(win)
end

--- Track the window the user edits in (called once, when the plugin is first used).
---@param group integer
function M.wire(group)
  M.note_window()
  api.nvim_create_autocmd({ 'WinEnter', 'BufWinEnter' }, {
    group = group,
    callback = function()
      M.note_window()
    end,
  })
end

-- ---------------------------------------------------------------- diagnostics

local SEVERITY = { 'error', 'warning', 'information', 'hint' }

--- A diagnostic as the protocol has it (characters in UTF-16, as LSP counts).
---@param d vim.Diagnostic
---@param path string
---@return turnstoned.EditorDiagnostic
local function diagnostic(d, path)
  local buf = d.bufnr
  local loaded = buf and api.nvim_buf_is_loaded(buf)
  local end_lnum = d.end_lnum or d.lnum
  local function char(row, col)
    return loaded and M.utf16(line_at(buf, row), col or 0) or (col or 0)
  end
  local code = d.code
  if code == nil and type(d.user_data) == 'table' and type(d.user_data.lsp) == 'table' then
    code = d.user_data.lsp.code
  end
  return {
    path = path,
    range = {
      startLine = d.lnum,
      startCharacter = char(d.lnum, d.col),
      endLine = end_lnum,
      endCharacter = char(end_lnum, d.end_col or d.col),
    },
    severity = SEVERITY[d.severity] or 'error',
    message = tostring(d.message or ''),
    source = d.source ~= nil and tostring(d.source) or nil,
    code = code ~= nil and code ~= vim.NIL and tostring(code) or nil,
  }
end

--- The diagnostics Neovim shows in a buffer, or in every buffer with a file (`buf` nil).
---@param buf? integer
---@return turnstoned.EditorDiagnostic[]
function M.diagnostics(buf)
  local out = {}
  local paths = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    local b = d.bufnr or buf
    if b then
      if paths[b] == nil then
        paths[b] = M.path(b) or false
      end
      if paths[b] then
        out[#out + 1] = diagnostic(d, paths[b])
        if #out >= MAX_DIAGNOSTICS then
          break
        end
      end
    end
  end
  return out
end

-- ---------------------------------------------------------------- the editor state

---@class turnstoned.SentSelection
---@field buf integer
---@field tick integer  the buffer's changedtick when it was sent
---@field selection turnstoned.EditorSelection

local sent ---@type turnstoned.SentSelection?

--- A region of a buffer between two positions (as `getpos()` gives them) in visual mode
--- `mode` ('v', 'V' or CTRL-V) as an editor selection: its range and text.
---@param buf integer
---@param p1 integer[]
---@param p2 integer[]
---@param mode string
---@return turnstoned.EditorSelection?
function M.region(buf, p1, p2, mode)
  if p1[2] == 0 or p2[2] == 0 then
    return nil
  end
  local a, b = p1, p2
  if b[2] < a[2] or (b[2] == a[2] and b[3] < a[3]) then
    a, b = b, a
  end
  local ok, lines = pcall(vim.fn.getregion, { buf, a[2], a[3], a[4] or 0 }, { buf, b[2], b[3], b[4] or 0 },
    { type = mode })
  if not ok or type(lines) ~= 'table' then
    return nil
  end
  local first, last = a[2] - 1, b[2] - 1
  local last_line = line_at(buf, last)
  local range
  if mode == 'v' then
    -- The end is inclusive in Neovim: the range ends after its last character.
    local end_byte = math.min(b[3] - 1, math.max(#last_line - 1, 0))
    local after = end_byte + #(vim.fn.strcharpart(last_line:sub(end_byte + 1), 0, 1))
    range = { startLine = first, startCharacter = M.utf16(line_at(buf, first), a[3] - 1),
      endLine = last, endCharacter = M.utf16(last_line, after) }
  else
    range = { startLine = first, startCharacter = 0, endLine = last,
      endCharacter = M.utf16(last_line, #last_line) }
  end
  return { range = range, text = table.concat(lines, '\n') }
end

--- Remember the selection a prompt is sent about (`:'<,'>Turnstoned`): lines `line1` to
--- `line2` of `buf`, with the columns of the last visual selection when it was these lines.
--- The next prompt's editor state carries it, unless the buffer changed meanwhile.
---@param buf integer
---@param line1 integer from 1
---@param line2 integer from 1
function M.remember_selection(buf, line1, line2)
  local p1, p2 = vim.fn.getpos("'<"), vim.fn.getpos("'>")
  local mode = vim.fn.visualmode()
  local from_visual = api.nvim_get_current_buf() == buf and p1[2] == line1 and p2[2] == line2 and mode ~= ''
  local selection
  if from_visual then
    selection = M.region(buf, p1, p2, mode)
  else
    selection = M.region(buf, { buf, line1, 1, 0 }, { buf, line2, vim.v.maxcol, 0 }, 'V')
  end
  sent = selection and { buf = buf, tick = api.nvim_buf_get_changedtick(buf), selection = selection } or nil
end

--- The selection of window `win`: the live visual selection when the window is in visual
--- mode, else the one sent from it, else the cursor as an empty range.
---@param win integer
---@return turnstoned.EditorSelection
local function selection_of(win)
  local buf = api.nvim_win_get_buf(win)
  local mode = api.nvim_get_mode().mode:sub(1, 1)
  if win == api.nvim_get_current_win() and (mode == 'v' or mode == 'V' or mode == '\22') then
    local live = M.region(buf, vim.fn.getpos('v'), vim.fn.getpos('.'), mode)
    if live then
      return live
    end
  end
  if sent and sent.buf == buf and sent.tick == api.nvim_buf_get_changedtick(buf) then
    return sent.selection
  end
  local cursor = api.nvim_win_get_cursor(win)
  local row = cursor[1] - 1
  local char = M.utf16(line_at(buf, row), cursor[2])
  return { range = { startLine = row, startCharacter = char, endLine = row, endCharacter = char } }
end

--- What the user has in front of them, for `turn/start` (nil: the `editor_context` option
--- is off, or the window the user works in shows no file). A selection sent is used once.
---@return turnstoned.EditorState?
function M.state()
  local ok, cfg = pcall(config.get)
  if not ok or cfg.editor_context == false then
    sent = nil
    return nil
  end
  local win = M.active_win()
  local buf = win and api.nvim_win_get_buf(win)
  local path = buf and M.path(buf)
  if not (win and buf and path) then
    return nil
  end
  local ft = vim.bo[buf].filetype
  local state = {
    activeFile = path,
    languageId = ft ~= '' and ft or nil,
    modified = vim.bo[buf].modified,
    selection = selection_of(win),
    visible = api.nvim_win_call(win, function()
      return { startLine = vim.fn.line('w0') - 1, startCharacter = 0, endLine = vim.fn.line('w$') - 1,
        endCharacter = 0 }
    end),
  }
  sent = nil
  local diags = M.diagnostics(buf)
  if #diags > 0 then
    state.diagnostics = diags
  end
  return state
end

-- ---------------------------------------------------------------- the daemon's requests

local served = {} ---@type table<string, integer> changedtick of each unsaved buffer served, by path

--- The changedtick a buffer had when its unsaved text was last given to the daemon.
---@param path string
---@return integer?
function M.served_tick(path)
  return served[path]
end

--- A buffer's text as writing it would make the file: its lines joined with "\n", ending
--- with one when 'eol' (or 'fixeol', for a file that is not 'binary') says it does.
---@param buf integer
---@return string
function M.text(buf)
  local lines = api.nvim_buf_get_lines(buf, 0, -1, false)
  if #lines == 1 and lines[1] == '' then
    return ''
  end
  local bo = vim.bo[buf]
  local eol = bo.eol or (bo.fixeol and not bo.binary)
  return table.concat(lines, '\n') .. (eol and '\n' or '')
end

---@param msg string
---@return turnstoned.RpcError
local function invalid(msg)
  return { code = vim.lsp.protocol.ErrorCodes.InvalidParams, message = msg }
end

---@param p turnstoned.EditorDiagnosticsParams
---@param respond fun(result?: table, err?: turnstoned.RpcError)
local function serve_diagnostics(p, respond)
  if p.path ~= nil and type(p.path) ~= 'string' then
    return respond(nil, invalid('path must be a string'))
  end
  if p.path == nil then
    return respond({ diagnostics = M.diagnostics(nil) })
  end
  local buf = M.find_buf(p.path)
  respond({ diagnostics = buf and M.diagnostics(buf) or {} })
end

---@param _ turnstoned.EditorOpenFilesParams
---@param respond fun(result?: table, err?: turnstoned.RpcError)
local function serve_open_files(_, respond)
  local active = M.active_buf()
  local files, seen = {}, {}
  for _, buf in ipairs(api.nvim_list_bufs()) do
    local path = vim.bo[buf].buflisted and api.nvim_buf_is_loaded(buf) and M.path(buf)
    if path and not seen[path] then
      seen[path] = true
      files[#files + 1] = { path = path, modified = vim.bo[buf].modified, active = buf == active }
    end
  end
  respond({ files = files })
end

---@param _ turnstoned.EditorBuffersParams
---@param respond fun(result?: table, err?: turnstoned.RpcError)
local function serve_buffers(_, respond)
  local out = {}
  served = {}
  for _, buf in ipairs(api.nvim_list_bufs()) do
    local path = api.nvim_buf_is_loaded(buf) and vim.bo[buf].modified and M.path(buf)
    if path and not served[path] then
      served[path] = api.nvim_buf_get_changedtick(buf)
      out[#out + 1] = { path = path, text = M.text(buf) }
    end
  end
  respond({ buffers = out })
end

--- A location of a definition or reference answer (Location or LocationLink) in the
--- protocol's terms; characters are converted from the language server's encoding to UTF-16
--- when the file is loaded.
---@param loc table
---@param encoding string
---@return turnstoned.EditorLocation?
local function location(loc, encoding)
  local uri = loc.uri or loc.targetUri
  local range = loc.range or loc.targetSelectionRange or loc.targetRange
  if type(uri) ~= 'string' or type(range) ~= 'table' then
    return nil
  end
  local path = vim.uri_to_fname(uri)
  local buf = M.find_buf(path)
  local s, e = range.start or {}, range['end'] or {}
  local function char(row, ch)
    if buf and encoding ~= 'utf-16' then
      local line = line_at(buf, row)
      local ok, byte = pcall(vim.str_byteindex, line, encoding, ch, false)
      return ok and M.utf16(line, byte) or ch
    end
    return ch
  end
  local text
  if buf then
    text = line_at(buf, s.line or 0)
  elseif vim.fn.filereadable(path) == 1 then
    text = vim.fn.readfile(path, '', (s.line or 0) + 1)[(s.line or 0) + 1]
  end
  return {
    path = vim.uv.fs_realpath(path) or path,
    range = { startLine = s.line or 0, startCharacter = char(s.line or 0, s.character or 0),
      endLine = e.line or s.line or 0, endCharacter = char(e.line or s.line or 0, e.character or 0) },
    text = text,
  }
end

---@param buf integer
---@param method string
---@return vim.lsp.Client[]
local function clients_of(buf, method)
  return vim.tbl_filter(function(c)
    if new_utf then
      return c:supports_method(method, buf)
    end
    return c.supports_method(method, { bufnr = buf })
  end, vim.lsp.get_clients({ bufnr = buf }))
end

--- The definition of, or the references to, the symbol at a position, from every language
--- server attached to the file's buffer.
---@param buf integer
---@param p turnstoned.EditorSymbolParams
---@param method string
---@param clients vim.lsp.Client[]
---@param respond fun(result?: table, err?: turnstoned.RpcError)
local function ask_servers(buf, p, method, clients, respond)
  local line = line_at(buf, p.line)
  local byte = M.byte(line, p.character)
  local pending, locations, seen = #clients, {}, {}
  local done = false
  local function finish()
    if not done then
      done = true
      respond({ locations = locations })
    end
  end
  local timer = vim.defer_fn(finish, SYMBOL_TIMEOUT_MS)
  for _, c in ipairs(clients) do
    local encoding = c.offset_encoding or 'utf-16'
    local ok, ch = pcall(vim.str_utfindex, line, encoding, byte, false)
    if not new_utf or not ok then
      ch = p.character
    end
    local params = {
      textDocument = { uri = vim.uri_from_bufnr(buf) },
      position = { line = p.line, character = ch },
      context = p.action == 'references' and { includeDeclaration = true } or nil,
    }
    local function handler(err, result)
      if not err and type(result) == 'table' then
        local list = (result.uri or result.targetUri) and { result } or result
        for _, loc in ipairs(list) do
          local l = location(loc, encoding)
          local key = l and ('%s:%d:%d'):format(l.path, l.range.startLine, l.range.startCharacter)
          if l and not seen[key] then
            seen[key] = true
            locations[#locations + 1] = l
          end
        end
      elseif err then
        log.info('%s from %s: %s', method, c.name, err.message or vim.inspect(err))
      end
      pending = pending - 1
      if pending == 0 then
        if timer and not timer:is_closing() then
          timer:stop()
          timer:close()
        end
        vim.schedule(finish)
      end
    end
    local called, accepted
    if new_utf then
      called, accepted = pcall(c.request, c, method, params, handler, buf)
    else
      called, accepted = pcall(c.request, method, params, handler, buf)
    end
    if not called or accepted == false then
      log.info('%s not sent to %s: %s', method, c.name, tostring(accepted))
      pending = pending - 1
    end
  end
  if pending == 0 then
    if timer and not timer:is_closing() then
      timer:stop()
      timer:close()
    end
    finish()
  end
end

---@param p turnstoned.EditorSymbolParams
---@param respond fun(result?: table, err?: turnstoned.RpcError)
local function serve_symbol(p, respond)
  if p.action ~= 'definition' and p.action ~= 'references' then
    return respond(nil, invalid('action must be definition or references'))
  elseif type(p.path) ~= 'string' or type(p.line) ~= 'number' or type(p.character) ~= 'number' then
    return respond(nil, invalid('give path, line and character'))
  end
  local method = p.action == 'definition' and 'textDocument/definition' or 'textDocument/references'
  local buf = M.find_buf(p.path)
  if buf then
    return ask_servers(buf, p, method, clients_of(buf, method), respond)
  elseif vim.fn.filereadable(p.path) == 0 then
    return respond({ locations = {} })
  end
  -- Not loaded: load it (unlisted), which starts the language servers set up for its
  -- filetype, and give them a moment to attach.
  buf = vim.fn.bufadd(p.path)
  pcall(vim.fn.bufload, buf)
  local waited = 0
  local function try()
    local clients = clients_of(buf, method)
    if #clients > 0 or waited >= ATTACH_WAIT_MS or #vim.lsp.get_clients() == 0 then
      return ask_servers(buf, p, method, clients, respond)
    end
    waited = waited + 100
    vim.defer_fn(try, 100)
  end
  try()
end

--- The handlers of the daemon's editor/* requests, by method.
---@type table<string, fun(params: table, respond: fun(result?: table, err?: turnstoned.RpcError))>
M.handlers = {
  ['editor/diagnostics'] = serve_diagnostics,
  ['editor/openFiles'] = serve_open_files,
  ['editor/symbol'] = serve_symbol,
  ['editor/buffers'] = serve_buffers,
}

--- Answer the daemon's editor/* requests (called once, when the plugin is first used).
function M.serve()
  local client = require('turnstoned.client')
  local methods = require('turnstoned.protocol').methods
  for _, method in ipairs({ methods.editor_diagnostics, methods.editor_open_files, methods.editor_symbol,
    methods.editor_buffers }) do
    client.on_request(method, M.handlers[method])
  end
end

return M
