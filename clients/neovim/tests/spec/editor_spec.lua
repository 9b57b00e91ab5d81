-- What the editor shows reaches the model, against the real daemon: the editor state with
-- each prompt (file, selection, cursor, diagnostics; off with editor_context = false), the
-- editor/* services (diagnostics, open files, a symbol through a language server, unsaved
-- buffers read and edited), buffers following what tools wrote, the project instructions in
-- the winbar, and undo of a turn from before a daemon restart.
local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/../helpers.lua')
local api = vim.api

vim.o.columns, vim.o.lines = 160, 50
local model = H.with_daemon()
-- The project's instructions, there before the first session starts.
vim.fn.writefile({ '# Project rules', 'Answer briefly.' }, H.workspace .. '/AGENTS.md')
vim.cmd.cd(vim.fn.fnameescape(H.workspace))

local turnstoned = require('turnstoned')
local session = require('turnstoned.session')
local turns = 0

---@param name string
---@param content string
---@return string path
local function file(name, content)
  local path = H.workspace .. '/' .. name
  vim.fn.writefile(vim.split(content, '\n', { plain = true }), path, 'b')
  return path
end

--- A file's content (nil while it cannot be read: an undo may be replacing it).
---@param name string
---@return string?
local function disk(name)
  local ok, lines = pcall(vim.fn.readfile, H.workspace .. '/' .. name, 'b')
  return ok and table.concat(lines, '\n') or nil
end

--- Send a prompt with `ask` and wait for its turn to end.
---@param send fun()
local function run(send)
  send()
  turns = turns + 1
  H.wait_turns(session.current(), turns)
end

---@param content any a message's content: a string or a list of parts
---@return string
local function content_text(content)
  if type(content) == 'string' then
    return content
  end
  return table.concat(vim.tbl_map(function(part)
    return type(part) == 'table' and part.text or ''
  end, type(content) == 'table' and content or {}), '')
end

--- The last user message of the model's last request.
---@return string
local function last_user_message()
  local messages = model.request(-1).messages
  for i = #messages, 1, -1 do
    if messages[i].role == 'user' then
      return content_text(messages[i].content)
    end
  end
  return ''
end

--- What the model read as the result of tool call `id` (in its last request).
---@param id string
---@return string
local function tool_result(id)
  for _, m in ipairs(model.request(-1).messages) do
    if m.role == 'tool' and m.tool_call_id == id then
      return content_text(m.content)
    end
  end
  error('no result of ' .. id .. ' in the last request')
end

---@param what string
---@param fn fun(labels: string[]): integer?
local function approve(what, fn)
  H.stub_select(function(_, labels)
    if fn then
      fn(labels)
    end
    return H.find(labels, what)
  end)
end

local notes = H.record_notify

local code_win = api.nvim_get_current_win()

H.test('a prompt sent about a visual selection carries the editor state: the file and the selected text', function()
  file('calc.py', 'def add(a, b):\n    return a + b\n\nprint(add(1, 2))\n')
  vim.cmd.edit('calc.py')
  vim.cmd('normal! 1G04lv2G09l\27') -- from "add" on line 1 to "return" on line 2
  model.push({ text = 'It adds.' })
  run(function()
    vim.cmd("'<,'>Turnstoned What does this do?")
  end)
  local said = last_user_message()
  H.ok(said:find('[Editor state', 1, true), 'the editor state block:\n' .. said)
  H.ok(said:find('Active file: calc.py (python)', 1, true), 'the file and its language:\n' .. said)
  H.ok(said:find('Selection: lines 1-2:\n```\nadd(a, b):\n    return\n```', 1, true), 'the selected text:\n' .. said)
  H.ok(said:find('What does this do?', 1, true), 'the prompt:\n' .. said)
  H.ok(not H.text(session.current().buf):find('Editor state', 1, true), 'the transcript shows the prompt alone')
end)

H.test('from the prompt window the state names the window the user came from, with its cursor', function()
  api.nvim_set_current_win(code_win)
  api.nvim_win_set_cursor(code_win, { 2, 4 })
  turnstoned.open()
  H.ok(api.nvim_get_current_win() ~= code_win, 'the prompt window has the cursor')
  vim.cmd.stopinsert()
  api.nvim_buf_set_lines(0, 0, -1, false, { 'And now?' })
  model.push({ text = 'Still adding.' })
  run(require('turnstoned.ui').send_prompt)
  local said = last_user_message()
  H.ok(said:find('Active file: calc.py (python)', 1, true), said)
  H.ok(said:find('Cursor: line 2, column 5', 1, true), 'the cursor, not the selection sent before:\n' .. said)
  H.ok(said:find('Visible: lines 1-', 1, true), said)
  api.nvim_set_current_win(code_win)
end)

H.test('with editor_context = false the prompt goes alone', function()
  vim.g.turnstoned = vim.tbl_extend('force', vim.g.turnstoned, { editor_context = false })
  model.push({ text = 'Plain.' })
  run(function()
    turnstoned.ask('No state please')
  end)
  local said = last_user_message()
  H.ok(said:find('No state please', 1, true) and not said:find('Editor state', 1, true), said)
  vim.g.turnstoned = vim.tbl_extend('force', vim.g.turnstoned, { editor_context = true })
end)

H.test('the model reads the diagnostics the editor shows and the files it has open', function()
  local ns = api.nvim_create_namespace('editor_spec')
  local buf = api.nvim_get_current_buf()
  vim.diagnostic.set(ns, buf, { { lnum = 3, col = 6, end_col = 9, severity = vim.diagnostic.severity.WARN,
    message = 'add is shadowed here', source = 'lintspec', code = 'W42' } })
  model.push({ tool_calls = {
    { 'call-d', 'editor_diagnostics', vim.json.encode({ path = 'calc.py' }) },
    { 'call-o', 'editor_open_files', '{}' },
  } }, { text = 'One warning.' })
  run(function()
    turnstoned.ask('Any problems?')
  end)
  local diags = tool_result('call-d')
  H.ok(diags:find('calc.py:4:7: warning: add is shadowed here [lintspec W42]', 1, true), diags)
  local open = tool_result('call-o')
  H.ok(open:find('- calc.py (active)', 1, true), open)
  local said = model.request(-2).messages
  local first = ''
  for _, m in ipairs(said) do
    if m.role == 'user' then
      first = content_text(m.content)
    end
  end
  H.ok(first:find('- line 4: warning: add is shadowed here [lintspec]', 1, true), 'the prompt\'s state lists it:\n' .. first)
  vim.diagnostic.reset(ns, buf)
end)

H.test('editor_symbol asks the language server attached to the file; none attached is no location', function()
  local path = file('util.py', 'def helper():\n    return 1\n\nhelper()\n')
  local asked
  local function server(dispatchers)
    local closing = false
    return {
      request = function(method, params, callback)
        if method == 'initialize' then
          callback(nil, { capabilities = { definitionProvider = true, referencesProvider = true } })
        elseif method == 'textDocument/definition' then
          asked = params
          callback(nil, { { uri = params.textDocument.uri,
            range = { start = { line = 0, character = 4 }, ['end'] = { line = 0, character = 10 } } } })
        elseif method == 'shutdown' then
          callback(nil, vim.NIL)
        end
        return true, 1
      end,
      notify = function(method)
        if method == 'exit' then
          dispatchers.on_exit(0, 0)
        end
      end,
      is_closing = function()
        return closing
      end,
      terminate = function()
        closing = true
      end,
    }
  end
  vim.cmd.edit('util.py')
  local id = vim.lsp.start({ name = 'specls', cmd = server, root_dir = H.workspace })
  H.wait('the language server', function()
    return #vim.lsp.get_clients({ bufnr = 0, name = 'specls' }) > 0
  end)
  model.push({ tool_calls = {
    { 'call-s', 'editor_symbol', vim.json.encode({ action = 'definition', path = 'util.py', line = 4, symbol = 'helper' }) },
    { 'call-n', 'editor_symbol', vim.json.encode({ action = 'references', path = 'calc.py', line = 1, symbol = 'add' }) },
  } }, { text = 'Found it.' })
  run(function()
    turnstoned.ask('Where is helper defined?')
  end)
  H.eq(asked and asked.position, { line = 3, character = 0 }, 'the position asked')
  H.eq(asked.textDocument.uri, vim.uri_from_fname(path), 'the document')
  local found = tool_result('call-s')
  H.ok(found:find('util.py:1:5: def helper():', 1, true), found)
  local none = tool_result('call-n')
  H.ok(none:find('knows no references of add', 1, true), none)
  vim.lsp.stop_client(id, true)
  vim.cmd.edit('calc.py')
end)

H.test('an unsaved buffer is what read_file reads and edit_file edits; the buffer then shows the edit, saved', function()
  file('notes.txt', 'one\ntwo\n')
  vim.cmd.edit('notes.txt')
  local buf = api.nvim_get_current_buf()
  api.nvim_buf_set_lines(buf, 1, 2, false, { 'two, unsaved' })
  approve('Approve')
  model.push({ tool_calls = { { 'call-r', 'read_file', vim.json.encode({ path = 'notes.txt' }) } } },
    { tool_calls = { { 'call-e', 'edit_file', vim.json.encode({ path = 'notes.txt', old_string = 'one',
      new_string = 'ONE' }) } } },
    { text = 'Edited.' })
  run(function()
    turnstoned.ask('Capitalise the first line')
  end)
  local got = tool_result('call-r')
  H.ok(got:find('two, unsaved', 1, true), 'read_file read the buffer:\n' .. got)
  H.eq(H.text(buf), 'ONE\ntwo, unsaved', 'the buffer')
  H.eq(vim.bo[buf].modified, false, 'the buffer is saved')
  H.eq(disk('notes.txt'), 'ONE\ntwo, unsaved\n', 'the file')

  -- Typed in after the daemon read the buffer (while the edit is asked about): kept.
  api.nvim_buf_set_lines(buf, 1, 2, false, { 'two, again' })
  approve('Approve', function()
    api.nvim_buf_set_lines(buf, 0, 0, false, { 'typed meanwhile' })
  end)
  local seen = notes()
  model.push({ tool_calls = { { 'call-e2', 'edit_file', vim.json.encode({ path = 'notes.txt', old_string = 'ONE',
    new_string = 'One' }) } } }, { text = 'Edited again.' })
  run(function()
    turnstoned.ask('Not so loud')
  end)
  H.eq(disk('notes.txt'), 'One\ntwo, again\n', 'the file: the text read, with the edit')
  H.eq(H.text(buf), 'typed meanwhile\nONE\ntwo, again', 'the buffer as typed')
  H.ok(table.concat(seen, '\n'):find('changed notes.txt on disk', 1, true), vim.inspect(seen))
  vim.cmd('silent! edit!')
end)

H.test('a command that changes an open file reloads its buffer in place; a buffer edited meanwhile is kept', function()
  file('list.txt', 'a\nb\nc\n')
  vim.cmd.edit('list.txt')
  local buf = api.nvim_get_current_buf()
  api.nvim_win_set_cursor(0, { 2, 0 })
  approve('Approve')
  model.push({ tool_calls = { { 'call-b', 'bash', vim.json.encode({ command = "printf 'a\\nB\\nc\\n' > list.txt" }) } } },
    { text = 'Changed b.' })
  run(function()
    turnstoned.ask('Upper-case b')
  end)
  H.eq(H.text(buf), 'a\nB\nc', 'the buffer follows the command')
  H.eq(vim.bo[buf].modified, false, 'not modified')
  H.eq(api.nvim_win_get_cursor(0), { 2, 0 }, 'the cursor stays')

  -- The user types while the write is asked about: the daemon did not read that text.
  approve('Approve', function()
    api.nvim_buf_set_lines(buf, 0, 1, false, { 'mine' })
  end)
  local seen = notes()
  model.push({ tool_calls = { { 'call-w', 'write_file', vim.json.encode({ path = 'list.txt', content = 'x\ny\n' }) } } },
    { text = 'Rewritten.' })
  run(function()
    turnstoned.ask('Rewrite the list')
  end)
  H.eq(disk('list.txt'), 'x\ny\n', 'the file as written')
  H.eq(H.text(buf), 'mine\nB\nc', 'the buffer as the user has it')
  H.ok(vim.bo[buf].modified, 'still modified')
  local warned = table.concat(seen, '\n')
  H.ok(warned:find('changed list.txt on disk while its buffer has unsaved changes', 1, true), warned)
  vim.cmd('silent! edit!')
end)

H.test('the project instructions the model reads are named in the chat winbar and in :checkhealth', function()
  local chat = session.current()
  H.eq(chat:instructions_label(), 'AGENTS.md', 'the files')
  local win = assert(require('turnstoned.ui').chat_win())
  local bar = api.nvim_eval_statusline(vim.wo[win].winbar, { winid = win, use_winbar = true, maxwidth = 200 }).str
  H.ok(bar:find('instructions: AGENTS.md', 1, true), bar)
  -- Headless Neovim 0.11 draws the report's tab on a grid of the size it started with.
  vim.o.columns, vim.o.lines = 80, 24
  vim.cmd('checkhealth turnstoned')
  local report = H.text(api.nvim_get_current_buf())
  vim.cmd.bwipeout(api.nvim_get_current_buf())
  vim.o.columns, vim.o.lines = 160, 50
  H.ok(report:find('instructions the model reads: AGENTS.md', 1, true), report)
  api.nvim_set_current_win(code_win)
end)

H.test('after a daemon restart the resumed chat undoes its last turn from before the restart, and redoes it after another', function()
  file('keep.txt', 'before\n')
  model.push({ tool_calls = { { 'call-k', 'write_file', vim.json.encode({ path = 'keep.txt', content = 'after\n' }) } } },
    { text = 'Written.' })
  approve('Approve')
  run(function()
    turnstoned.ask('Change keep.txt')
  end)
  H.eq(disk('keep.txt'), 'after\n', 'written')
  local chat = H.resume_after_restart(session.current())
  H.ok(chat:instructions_label() == 'AGENTS.md', 'the resumed chat knows the instructions too')
  vim.cmd('Turnstoned changes')
  local list
  H.wait('the changes list', function()
    list = vim.iter(api.nvim_list_bufs()):find(function(b)
      return api.nvim_buf_get_name(b):find('turnstoned://changes/', 1, true) ~= nil
    end)
    return list
  end)
  local listed = H.text(list)
  H.ok(listed:find('Changes of the turn "Change keep.txt"', 1, true) and listed:find('modified  keep.txt  +1 −1', 1, true),
    listed)
  vim.cmd.bwipeout(list)
  local seen = H.stub_select(function(_, labels)
    return H.find(labels, 'Keep the conversation')
  end)
  local said = notes()
  vim.cmd('Turnstoned undo')
  H.wait('keep.txt back', function()
    return disk('keep.txt') == 'before\n'
  end, nil, function()
    return vim.inspect({ said = said, turns = chat.turns, seen = seen })
  end)
  H.ok(seen[1].prompt:find('Undo the turn "Change keep.txt" (1 file', 1, true), seen[1].prompt)
  H.wait('the note', function()
    return H.text(chat.buf):find('↶ undid the last turn: restored keep.txt', 1, true) ~= nil
  end)
  seen = H.stub_select(function()
    return nil
  end)
  vim.cmd('Turnstoned rerun')
  H.ok(seen[1] and vim.tbl_contains(seen[1].labels, 'Rewrite the list')
    and not vim.tbl_contains(seen[1].labels, 'Change keep.txt'), 'rerun offers the earlier prompts but the undone one: '
    .. vim.inspect(seen[1]))

  -- Another restart: the daemon names the undo that took the turn back, so redo finds it.
  chat = H.resume_after_restart(chat)
  vim.cmd('Turnstoned redo')
  H.wait('keep.txt again', function()
    return disk('keep.txt') == 'after\n'
  end)
  H.wait('the redo note', function()
    return H.text(chat.buf):find('↷ redid the last turn: restored keep.txt', 1, true) ~= nil
  end)
end)

H.run()
