-- Reviewing a proposed file change in a diff tab, and answering from there.
local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/../helpers.lua')
local api = vim.api

vim.o.columns, vim.o.lines = 160, 50
local model = H.with_daemon()

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

---@param path string
---@return string
local function read(path)
  return table.concat(vim.fn.readfile(path, 'b'), '\n')
end

---@param name string
---@param content string
---@return table reply spec of a write_file call
local function write_call(id, name, content)
  return { id, 'write_file', vim.json.encode({ path = name, content = content }) }
end

--- The review tab's two windows: current (left) and proposed (right).
---@return integer[]?
local function review_windows()
  for _, tab in ipairs(api.nvim_list_tabpages()) do
    local wins = api.nvim_tabpage_list_wins(tab)
    local name = #wins == 2 and api.nvim_buf_get_name(api.nvim_win_get_buf(wins[1])) or ''
    if name:find('turnstoned://current/', 1, true) then
      return wins
    end
  end
end

---@param win integer
---@return string
local function win_text(win)
  return H.text(api.nvim_win_get_buf(win))
end

H.test('Review diff opens a diff tab of the file against the proposal; ga approves', function()
  local path = file('notes.txt', 'old first line\nkept line\n')
  H.stub_select(function(_, labels)
    return H.find(labels, 'Review diff')
  end)
  model.push({ tool_calls = { write_call('call-w1', 'notes.txt', 'new first line\nkept line\n') } },
    { text = 'Written.' })
  turnstoned.ask('Rewrite the notes')
  H.wait('the review tab', review_windows)
  local wins = assert(review_windows())
  H.eq(win_text(wins[1]), 'old first line\nkept line', 'the current side')
  H.eq(win_text(wins[2]), 'new first line\nkept line', 'the proposed side')
  H.ok(vim.wo[wins[1]].diff and vim.wo[wins[2]].diff, 'both windows are in diff mode')
  H.eq(api.nvim_get_current_win(), wins[2], 'the cursor is on the proposal')
  H.eq(read(path), 'old first line\nkept line\n', 'nothing written before the answer')
  api.nvim_feedkeys('ga', 'x', false)
  turns = turns + 1
  H.wait_turns(session.current(), turns)
  H.eq(read(path), 'new first line\nkept line\n', 'the approved content')
  H.eq(review_windows(), nil, 'the review tab closed')
end)

H.test('a hunk dropped from the proposal (gd) is not written; the other is', function()
  local old = { 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten' }
  local path = file('hunks.txt', table.concat(old, '\n') .. '\n')
  local new = vim.deepcopy(old)
  new[2], new[9] = 'TWO', 'NINE'
  H.stub_select(function(_, labels)
    return H.find(labels, 'Review diff')
  end)
  model.push({ tool_calls = { write_call('call-h', 'hunks.txt', table.concat(new, '\n') .. '\n') } },
    { text = 'Wrote one of the two.' })
  turnstoned.ask('Change two lines')
  H.wait('the review tab', review_windows)
  local wins = assert(review_windows())
  local proposed = api.nvim_win_get_buf(wins[2])
  H.eq(vim.bo[proposed].modifiable, true, 'the proposal is editable')
  api.nvim_set_current_win(wins[2])
  api.nvim_win_set_cursor(wins[2], { 9, 0 })
  api.nvim_feedkeys('gd', 'x', false)
  H.eq(api.nvim_buf_get_lines(proposed, 8, 9, false)[1], 'nine', 'the dropped hunk is the file as it is')
  H.eq(api.nvim_buf_get_lines(proposed, 1, 2, false)[1], 'TWO', 'the other hunk stays')
  api.nvim_feedkeys('ga', 'x', false)
  turns = turns + 1
  H.wait_turns(session.current(), turns)
  local want = vim.deepcopy(old)
  want[2] = 'TWO'
  H.eq(read(path), table.concat(want, '\n') .. '\n', 'the file on disk holds only the kept hunk')
  local text = H.text(session.current().buf)
  H.ok(text:find('✎ edited by you', 1, true), 'the call says it was edited:\n' .. text)
end)

H.test('an edit_file proposal with a hunk dropped writes the rest; the model reads which hunk was dropped', function()
  local old = { 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten' }
  local path = file('edited.txt', table.concat(old, '\n') .. '\n')
  H.stub_select(function(_, labels)
    return H.find(labels, 'Review diff')
  end)
  local args = { path = 'edited.txt', old_string = table.concat(old, '\n', 2, 9),
    new_string = table.concat({ 'TWO', 'three', 'four', 'five', 'six', 'seven', 'eight', 'NINE' }, '\n') }
  model.push({ tool_calls = { { 'call-r', 'read_file', '{"path": "edited.txt"}' } } },
    { tool_calls = { { 'call-e', 'edit_file', vim.json.encode(args) } } }, { text = 'Edited.' })
  turnstoned.ask('Edit two lines')
  H.wait('the review tab', review_windows, nil, function()
    return H.text(session.current().buf)
  end)
  local wins = assert(review_windows())
  api.nvim_set_current_win(wins[2])
  api.nvim_win_set_cursor(wins[2], { 2, 0 })
  api.nvim_feedkeys('gd', 'x', false)
  api.nvim_feedkeys('ga', 'x', false)
  turns = turns + 1
  H.wait_turns(session.current(), turns)
  local want = vim.deepcopy(old)
  want[9] = 'NINE'
  H.eq(read(path), table.concat(want, '\n') .. '\n', 'the file on disk holds only the kept hunk')
  local _, history = require('turnstoned.client').request_sync(require('turnstoned.protocol').methods.session_resume,
    { sessionId = session.current().sid })
  local told = vim.iter(history.items):any(function(item)
    return item.type == 'toolCall' and item.callId ~= nil and (item.output or ''):find('dropped by the user', 1, true) ~= nil
  end)
  H.ok(told, 'the model read that a hunk was dropped')
end)

H.test('dp from the file as it is and plain editing of the proposal are what gets written', function()
  local path = file('typed.txt', 'alpha\nbeta\n')
  H.stub_select(function(_, labels)
    return H.find(labels, 'Review diff')
  end)
  model.push({ tool_calls = { write_call('call-t', 'typed.txt', 'alpha\nBETA\n') } }, { text = 'Written as you typed.' })
  turnstoned.ask('Shout beta')
  H.wait('the review tab', review_windows)
  local wins = assert(review_windows())
  api.nvim_set_current_win(wins[1])
  api.nvim_win_set_cursor(wins[1], { 2, 0 })
  vim.cmd('diffput')
  H.eq(H.text(api.nvim_win_get_buf(wins[2])), 'alpha\nbeta', 'dp put the line as it is into the proposal')
  api.nvim_buf_set_lines(api.nvim_win_get_buf(wins[2]), 2, 2, false, { 'gamma, typed by hand' })
  api.nvim_set_current_win(wins[2])
  api.nvim_feedkeys('ga', 'x', false)
  turns = turns + 1
  H.wait_turns(session.current(), turns)
  H.eq(read(path), 'alpha\nbeta\ngamma, typed by hand\n', 'the file on disk')
end)

H.test('gr in the review tab denies with a reason', function()
  local path = file('keep.txt', 'precious\n')
  H.stub_select(function(_, labels)
    return H.find(labels, 'Review diff')
  end)
  H.stub_input('keep it as it is')
  model.push({ tool_calls = { write_call('call-w2', 'keep.txt', 'overwritten\n') } },
    { text = 'Left it alone.' })
  turnstoned.ask('Overwrite keep.txt')
  H.wait('the review tab', review_windows)
  api.nvim_feedkeys('gr', 'x', false)
  turns = turns + 1
  H.wait_turns(session.current(), turns)
  H.eq(read(path), 'precious\n', 'the file is unchanged')
  H.ok(H.text(session.current().buf):find('Denied by user: keep it as it is', 1, true),
    'the model read the reason')
end)

H.test('one change approved in its review, the other denied from the list', function()
  local a, b = file('a.txt', 'a0\n'), file('b.txt', 'b0\n')
  local answers = { 'Review diff: ⚙ write_file (write): a.txt', 'Deny' }
  local seen = H.stub_select(function(_, labels)
    return H.find(labels, table.remove(answers, 1))
  end)
  H.stub_input('')
  model.push({ tool_calls = { write_call('call-a', 'a.txt', 'a1\n'), write_call('call-b', 'b.txt', 'b1\n') } },
    { text = 'Wrote a, not b.' })
  turnstoned.ask('Change both files')
  H.wait('the review tab', review_windows)
  api.nvim_feedkeys('ga', 'x', false)
  turns = turns + 1
  H.wait_turns(session.current(), turns)
  H.eq(read(a), 'a1\n', 'a.txt (approved in review)')
  H.eq(read(b), 'b0\n', 'b.txt (denied)')
  H.eq(#seen, 2, 'prompts')
  H.ok(seen[2].prompt:find('b.txt', 1, true), 'the second prompt asks about b.txt: ' .. seen[2].prompt)
end)

H.test('calls that change the same file are answered together', function()
  local path = file('same.txt', 's0\n')
  local seen = H.stub_select(function(_, labels)
    return H.find(labels, 'Review diff')
  end)
  H.stub_input('')
  model.push({ tool_calls = { write_call('call-s1', 'same.txt', 's1\n'), write_call('call-s2', 'same.txt', 's2\n') } },
    { text = 'Neither was written.' })
  turnstoned.ask('Write same.txt twice')
  H.wait('the review tab', review_windows)
  H.ok(not vim.iter(seen[1].labels):any(function(l)
    return l:find('Decide each', 1, true) ~= nil
  end), 'no per-call choice: ' .. vim.inspect(seen[1].labels))
  api.nvim_feedkeys('gr', 'x', false)
  turns = turns + 1
  H.wait_turns(session.current(), turns)
  H.eq(#seen, 1, 'one question for both calls')
  H.eq(read(path), 's0\n', 'the file is unchanged')
end)

H.test('an interrupt closes an open review tab', function()
  local path = file('c.txt', 'c0\n')
  H.stub_select(function(_, labels)
    return H.find(labels, 'Review diff')
  end)
  model.push({ tool_calls = { write_call('call-c', 'c.txt', 'c1\n') } })
  turnstoned.ask('Change c')
  H.wait('the review tab', review_windows)
  turnstoned.interrupt()
  turns = turns + 1
  H.wait_turns(session.current(), turns)
  H.wait('the review tab to close', function()
    return review_windows() == nil
  end)
  H.eq(read(path), 'c0\n', 'c.txt is unchanged')
end)

H.run()
