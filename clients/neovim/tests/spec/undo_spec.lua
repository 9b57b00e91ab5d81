-- What a turn changed, reviewed and taken back, against the real daemon: the changes block,
-- :Turnstoned changes (a file's diff, undo one file), undo and redo on disk, a file changed
-- in between asked about, and an earlier prompt sent again after a rewind.
local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/../helpers.lua')
local api = vim.api

vim.o.columns, vim.o.lines = 160, 50
-- Auto mode: the file tools write inside the workspace unasked.
local model = H.with_daemon({ '[approvals]', 'mode = "auto"' })

local turnstoned = require('turnstoned')
local session = require('turnstoned.session')
local turns = 0

---@param name string
---@return string? content, nil when the file does not exist
local function read(name)
  local path = H.workspace .. '/' .. name
  if vim.fn.filereadable(path) == 0 then
    return nil
  end
  return table.concat(vim.fn.readfile(path, 'b'), '\n')
end

---@param name string
---@param content string
local function write(name, content)
  vim.fn.writefile(vim.split(content, '\n', { plain = true }), H.workspace .. '/' .. name, 'b')
end

---@param id string
---@param name string
---@param content string
local function write_call(id, name, content)
  return { id, 'write_file', vim.json.encode({ path = name, content = content }) }
end

---@param prompt string
---@param ... table reply specs
local function turn(prompt, ...)
  model.push(...)
  turnstoned.ask(prompt)
  turns = turns + 1
  H.wait_turns(session.current(), turns)
end

--- Answer the next questions with the choices starting with these labels, in order.
---@param answers string[]
---@return table[] seen
local function answer(answers)
  return H.stub_select(function(_, labels)
    return H.find(labels, table.remove(answers, 1))
  end)
end

---@param what string
---@param name string
---@param want? string
local function wait_file(what, name, want)
  H.wait(what, function()
    return read(name) == want
  end)
end

---@param needle string
local function wait_note(needle)
  H.wait(needle, function()
    return H.text(session.current().buf):find(needle, 1, true) ~= nil
  end)
end

H.test('a turn that writes files ends with its changes; undo puts them back on disk and redo again', function()
  write('b.txt', 'b one\nb two\n')
  turn('Write a and change b', { tool_calls = {
    write_call('call-a', 'a.txt', 'a new\n'),
    write_call('call-b', 'b.txt', 'b one\nb TWO\n'),
  } }, { text = 'Wrote both.' })
  H.eq(read('a.txt'), 'a new\n', 'a.txt after the turn')
  local text = H.text(session.current().buf)
  H.ok(text:find('📝 changes in this turn: 2 files', 1, true), 'the changes block:\n' .. text)
  H.ok(text:find('  created   a.txt', 1, true) and text:find('  modified  b.txt', 1, true), text)
  local seen = answer({ 'Keep the conversation' })
  vim.cmd('Turnstoned undo')
  wait_file('a.txt to go', 'a.txt', nil)
  wait_file('b.txt back', 'b.txt', 'b one\nb two\n')
  H.ok(seen[1].prompt:find('Undo the turn "Write a and change b" (2 files)', 1, true), seen[1].prompt)
  wait_note('↶ undid the last turn: restored ')
  vim.cmd('Turnstoned redo')
  wait_file('a.txt again', 'a.txt', 'a new\n')
  wait_file('b.txt again', 'b.txt', 'b one\nb TWO\n')
  wait_note('↷ redid the last turn: restored ')
end)

H.test('a file changed after the turn is asked about; Keep mine keeps it, the rest is undone', function()
  write('b.txt', 'b one\nb TWO\nmy own line\n')
  local seen = answer({ 'Keep the conversation', 'Show diff', 'Keep mine' })
  vim.cmd('Turnstoned undo')
  wait_file('a.txt to go', 'a.txt', nil)
  H.eq(#seen, 3, 'questions: how, then the conflict (asked again after its diff)')
  H.ok(seen[2].prompt:find('You changed b.txt after the turn did', 1, true), seen[2].prompt)
  local diff = vim.iter(api.nvim_list_bufs()):find(function(buf)
    return api.nvim_buf_get_name(buf):find('turnstoned://conflict/b.txt', 1, true) ~= nil
  end)
  H.ok(diff and H.text(diff):find('\n%+my own line'), 'the diff of what the user changed: ' .. (diff and H.text(diff) or 'none'))
  vim.cmd.close()
  H.eq(read('b.txt'), 'b one\nb TWO\nmy own line\n', 'b.txt as the user has it')
  wait_note('kept yours: b.txt')
end)

--- The changes list's window, once it is open.
---@return integer?
local function list_win()
  for _, win in ipairs(api.nvim_tabpage_list_wins(0)) do
    if api.nvim_buf_get_name(api.nvim_win_get_buf(win)):find('turnstoned://changes/', 1, true) then
      return win
    end
  end
end

---@param win integer
---@param needle string
local function cursor_to(win, needle)
  local buf = api.nvim_win_get_buf(win)
  for i, line in ipairs(api.nvim_buf_get_lines(buf, 0, -1, false)) do
    if line:find(needle, 1, true) then
      api.nvim_set_current_win(win)
      return api.nvim_win_set_cursor(win, { i, 0 })
    end
  end
  error(('no %q in\n%s'):format(needle, H.text(buf)))
end

H.test(':Turnstoned changes lists the files; <CR> shows before and after; gu undoes one file', function()
  write('c.txt', 'c1\nc2\nc3\n')
  turn('Change c and d', { tool_calls = {
    write_call('call-c', 'c.txt', 'c1\nc2 changed\nc3\n'),
    write_call('call-d', 'd.txt', 'd new\n'),
  } }, { text = 'Changed them.' })
  vim.cmd('Turnstoned changes')
  H.wait('the changes list', list_win)
  local win = assert(list_win())
  local listed = H.text(api.nvim_win_get_buf(win))
  H.ok(listed:find('modified  c.txt  +1 −1', 1, true), listed)
  H.ok(listed:find('created   d.txt  +1 −0', 1, true), listed)
  cursor_to(win, 'c.txt')
  local tabs = #api.nvim_list_tabpages()
  api.nvim_feedkeys(api.nvim_replace_termcodes('<CR>', true, false, true), 'x', false)
  H.eq(#api.nvim_list_tabpages(), tabs + 1, 'a diff tab')
  local wins = api.nvim_tabpage_list_wins(0)
  H.eq(#wins, 2, 'before and after')
  H.eq(H.text(api.nvim_win_get_buf(wins[1])), 'c1\nc2\nc3', 'before the turn')
  H.eq(H.text(api.nvim_win_get_buf(wins[2])), 'c1\nc2 changed\nc3', 'the file now')
  H.ok(vim.wo[wins[1]].diff and vim.wo[wins[2]].diff, 'in diff mode')
  vim.cmd.tabclose()
  win = assert(list_win())
  cursor_to(win, 'c.txt')
  api.nvim_feedkeys('gu', 'x', false)
  wait_file('c.txt back', 'c.txt', 'c1\nc2\nc3\n')
  H.eq(read('d.txt'), 'd new\n', 'd.txt stays')
  vim.cmd.close()
end)

H.test(':Turnstoned rerun rewinds to before a prompt and puts it in the prompt window', function()
  local chat = session.current()
  answer({ 'Change c and d', 'Rewind this chat' })
  vim.cmd('Turnstoned rerun')
  wait_file('d.txt to go', 'd.txt', nil)
  local last_prompt
  H.wait('the prompt to edit', function()
    local win = require('turnstoned.ui').prompt_win()
    last_prompt = win and H.text(api.nvim_win_get_buf(win))
    return last_prompt == 'Change c and d'
  end, 5000, function()
    return vim.inspect(last_prompt)
  end)
  vim.cmd.stopinsert()
  H.ok(not H.text(chat.buf):find('Changed them.', 1, true), 'the rewound answer left the transcript:\n' .. H.text(chat.buf))
  local prompt = api.nvim_win_get_buf(assert(require('turnstoned.ui').prompt_win()))
  api.nvim_buf_set_lines(prompt, 0, -1, false, { 'Change only d' })
  model.push({ tool_calls = { write_call('call-d2', 'd.txt', 'd again\n') } }, { text = 'Changed d.' })
  require('turnstoned.ui').send_prompt()
  turns = turns + 1
  H.wait_turns(chat, turns)
  H.eq(read('d.txt'), 'd again\n', 'the edited prompt ran')
  vim.fn.writefile(H.screen(assert(require('turnstoned.ui').chat_win())), H.artifacts .. '/undo-screen.txt')
end)

H.test(':Turnstoned rerun can fork: a new chat from before the prompt, the old one left as it is', function()
  local old = session.current()
  local before = H.text(old.buf)
  answer({ 'Change only d', 'Fork a new chat from before it (files' })
  vim.cmd('Turnstoned rerun')
  H.wait('the fork', function()
    return session.current() ~= old
  end)
  local fork = session.current()
  H.wait('the prompt to edit', function()
    local win = require('turnstoned.ui').prompt_win()
    return win and H.text(api.nvim_win_get_buf(win)) == 'Change only d'
  end)
  vim.cmd.stopinsert()
  H.ok(fork.sid ~= old.sid, 'a session of its own')
  H.eq(H.text(old.buf), before, 'the old chat')
  local text = H.text(fork.buf)
  H.ok(text:find('Write a and change b', 1, true) and not text:find('Changed d.', 1, true),
    'the conversation before the prompt:\n' .. text)
  H.ok(text:find('⑂ forked from', 1, true), text)
  H.eq(read('d.txt'), 'd again\n', 'the files as they are')
end)

H.test('/undo and /redo in the prompt take the last turn back and bring it again', function()
  local chat = session.current()
  local ended = chat.turns_completed or 0
  model.push({ tool_calls = { write_call('call-e', 'e.txt', 'e\n') } }, { text = 'Wrote e.' })
  turnstoned.ask('Write e')
  H.wait_turns(chat, ended + 1)
  H.eq(read('e.txt'), 'e\n', 'e.txt after the turn')
  local prompt = api.nvim_win_get_buf(assert(require('turnstoned.ui').prompt_win()))
  local requests = model.requests()
  api.nvim_buf_set_lines(prompt, 0, -1, false, { '/undo' })
  require('turnstoned.ui').send_prompt()
  wait_file('e.txt to go', 'e.txt', nil)
  wait_note('↶ undid the last turn: ')
  wait_note(' · /redo brings it back')
  api.nvim_buf_set_lines(prompt, 0, -1, false, { '/redo' })
  require('turnstoned.ui').send_prompt()
  wait_file('e.txt again', 'e.txt', 'e\n')
  wait_note('↷ redid the last turn: ')
  H.eq(model.requests(), requests, 'no prompt reached the model')
end)

H.run()
