-- The chat against the real daemon and the scripted model: streaming, tool calls,
-- approvals, interrupt, resume.
local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/../helpers.lua')
local api = vim.api

vim.o.columns, vim.o.lines = 180, 60
local model = H.with_daemon()

local turnstoned = require('turnstoned')
local session = require('turnstoned.session')

H.test('streamed text lands in the chat without moving the cursor or the window', function()
  local code_win = api.nvim_get_current_win()
  model.push({ text = 'Hello from the scripted model.\nSecond line of the answer.', delay = 0.02 })
  vim.cmd('Turnstoned Say hello')
  local chat = session.current()
  local chat_win = require('turnstoned.ui').chat_win()
  H.ok(chat_win and chat_win ~= code_win, 'a chat window opened beside the code window')
  H.eq(api.nvim_get_current_win(), code_win, 'the focused window')
  -- The reader's cursor sits on the first line of the transcript, not on the last.
  api.nvim_win_set_cursor(chat_win, { 1, 0 })
  H.wait('the first streamed words', function()
    return H.text(chat.buf):find('Hello from', 1, true) ~= nil
  end)
  H.wait_turns(chat, 1)
  H.eq(api.nvim_get_current_win(), code_win, 'the focused window after the turn')
  H.eq(api.nvim_win_get_cursor(chat_win), { 1, 0 }, 'the chat cursor')
  local text = H.text(chat.buf)
  H.ok(text:find('## You\n\nSay hello', 1, true), 'the prompt is in the transcript:\n' .. text)
  H.ok(text:find('Hello from the scripted model.\nSecond line of the answer.', 1, true),
    'the whole answer is in the transcript:\n' .. text)
  H.eq(vim.bo[chat.buf].filetype, 'markdown', 'filetype')
  H.eq(vim.bo[chat.buf].modifiable, false, 'the transcript is read-only')
end)

H.test('a chat window at the last line follows the stream', function()
  local chat = session.current()
  local chat_win = assert(require('turnstoned.ui').chat_win())
  api.nvim_win_set_cursor(chat_win, { api.nvim_buf_line_count(chat.buf), 0 })
  model.push({ text = 'Following along.\nAnd more.' })
  turnstoned.ask('Keep going')
  H.wait_turns(chat, 2)
  H.eq(api.nvim_win_get_cursor(chat_win)[1], api.nvim_buf_line_count(chat.buf), 'cursor line')
end)

---@param chat turnstoned.Chat
---@param needle string
---@return integer lnum of the first line containing needle
local function line_of(chat, needle)
  for i, line in ipairs(api.nvim_buf_get_lines(chat.buf, 0, -1, false)) do
    if line:find(needle, 1, true) then
      return i
    end
  end
  error(('no line with %q in\n%s'):format(needle, H.text(chat.buf)), 2)
end

---@param chat turnstoned.Chat
---@param lnum integer
---@return string
local function status_at(chat, lnum)
  local marks = api.nvim_buf_get_extmarks(chat.buf, require('turnstoned.textbuf').status_ns,
    { lnum - 1, 0 }, { lnum - 1, -1 }, { details = true })
  for _, m in ipairs(marks) do
    if m[4].virt_text then
      return m[4].virt_text[1][1]
    end
  end
  return ''
end

H.test('a visual selection is sent with its path and line range', function()
  local chat = session.current()
  local code = H.workspace .. '/calc.py'
  vim.fn.writefile({ 'def add(a, b):', '    return a + b', '', 'print(add(1, 2))' }, code)
  local code_win = api.nvim_get_current_win()
  vim.cmd.cd(vim.fn.fnameescape(H.workspace))
  vim.cmd.edit('calc.py')
  model.push({ text = 'It adds two numbers.' })
  vim.cmd('1,2Turnstoned What does this do?')
  H.wait_turns(chat, 3)
  local text = H.text(chat.buf)
  local path = 'calc.py'
  H.ok(text:find(('`%s`, lines 1-2:'):format(path), 1, true), 'path and range:\n' .. text)
  H.ok(text:find('```python\ndef add(a, b):\n    return a + b\n```\n\nWhat does this do?', 1, true),
    'the code and the question:\n' .. text)
  H.eq(api.nvim_get_current_win(), code_win, 'the cursor stays in the code')
  -- Without a question, the selection waits in the prompt window for one.
  vim.cmd('4Turnstoned')
  local prompt = H.text(api.nvim_win_get_buf(assert(require('turnstoned.ui').prompt_win())))
  H.ok(prompt:find(('`%s`, line 4:'):format(path), 1, true), 'prefilled prompt:\n' .. prompt)
  vim.cmd.stopinsert()
  api.nvim_buf_set_lines(0, 0, -1, false, {})
  api.nvim_set_current_win(code_win)
end)

H.test('a tool call is approved through vim.ui.select; its output streams into a folded block', function()
  local chat = session.current()
  local seen = H.stub_select(function(_, labels)
    return H.find(labels, 'Approve')
  end)
  model.push({ tool_calls = { { 'call-echo', 'bash', '{"command": "touch streamed.txt; echo streamed-line; echo second-line"}' } } },
    { text = 'The command printed two lines.' })
  turnstoned.ask('Run the echo command')
  H.wait_turns(chat, 4)
  H.eq(#seen, 1, 'approval prompts')
  H.ok(seen[1].prompt:find('echo streamed-line', 1, true), 'the prompt names the command: ' .. seen[1].prompt)
  H.eq(seen[1].labels[2], 'Always (allow bash:touch, bash:@read-only for this session)', 'the rules it saves')
  local header = line_of(chat, '⚙ bash')
  H.ok(H.text(chat.buf):find('streamed%-line\nsecond%-line'), 'the output is in the block')
  H.ok(status_at(chat, header):find('done', 1, true), 'status: ' .. status_at(chat, header))
  local win = assert(require('turnstoned.ui').chat_win())
  api.nvim_win_call(win, function()
    H.eq(vim.fn.foldclosed(header), header, 'the tool block is a closed fold')
    H.ok(vim.fn.foldclosedend(header) > header + 2, 'the fold holds the command and output')
  end)
end)

H.test('a denial carries the reason typed in vim.ui.input to the model', function()
  local chat = session.current()
  H.stub_select(function(_, labels)
    return H.find(labels, 'Deny')
  end)
  H.stub_input('not on this machine')
  model.push({ tool_calls = { { 'call-rm', 'bash', '{"command": "rm -rf build"}' } } },
    { text = 'Understood, I will not delete it.' })
  turnstoned.ask('Clean the build')
  H.wait_turns(chat, 5)
  local header = line_of(chat, '⚙ bash: rm -rf build')
  H.ok(status_at(chat, header):find('declined', 1, true), 'status: ' .. status_at(chat, header))
  H.ok(H.text(chat.buf):find('Denied by user: not on this machine', 1, true),
    'the model read the reason:\n' .. H.text(chat.buf))
end)

H.test('several calls are decided one by one', function()
  local chat = session.current()
  local answers = { 'Decide each', 'Approve', 'Deny' }
  local seen = H.stub_select(function(_, labels)
    return H.find(labels, table.remove(answers, 1))
  end)
  H.stub_input('')
  model.push({ tool_calls = {
    { 'call-one', 'bash', '{"command": "touch first.txt; echo first-call"}' },
    { 'call-two', 'bash', '{"command": "touch second.txt; echo second-call"}' },
  } }, { text = 'One ran, one was denied.' })
  turnstoned.ask('Run both')
  H.wait_turns(chat, 6)
  H.eq(#seen, 3, 'prompts (the cycle, then each call)')
  H.ok(seen[1].prompt:find('2 calls', 1, true), seen[1].prompt)
  H.ok(status_at(chat, line_of(chat, 'echo first-call')):find('done', 1, true), 'first call ran')
  H.ok(status_at(chat, line_of(chat, 'echo second-call')):find('declined', 1, true), 'second denied')
end)

H.test('interrupt stops a turn that is streaming', function()
  local chat = session.current()
  model.push({ hang = 30, after_text = 'Thinking about it' })
  turnstoned.ask('Take your time')
  H.wait('the partial answer', function()
    return H.text(chat.buf):find('Thinking about it', 1, true) ~= nil
  end)
  H.ok(chat.running, 'the turn is running')
  vim.cmd('TurnstonedInterrupt')
  H.wait_turns(chat, 7)
  H.ok(H.text(chat.buf):find('interrupted', 1, true), 'the transcript says so')
  H.ok(H.text(chat.buf):find('Thinking about it', 1, true), 'the partial answer stays')
end)

H.test('an approval withdrawn by an interrupt closes its open prompt', function()
  local chat = session.current()
  local picker
  H.stub_select(function()
    picker = api.nvim_open_win(api.nvim_create_buf(false, true), true,
      { relative = 'editor', row = 1, col = 1, width = 40, height = 3 })
    return false -- the user has not answered yet
  end)
  model.push({ tool_calls = { { 'call-wait', 'bash', '{"command": "touch never.txt"}' } } })
  turnstoned.ask('Ask me first')
  H.wait('the approval prompt', function()
    return picker ~= nil
  end)
  H.ok(api.nvim_win_is_valid(picker), 'the picker is open')
  turnstoned.interrupt()
  H.wait_turns(chat, 8)
  H.wait('the picker to close', function()
    return not api.nvim_win_is_valid(picker)
  end)
  H.eq(require('turnstoned.questions').pending(), 0, 'pending prompts')
  H.ok(status_at(chat, line_of(chat, 'touch never.txt')):find('cancelled', 1, true), 'the call is cancelled')
end)

H.test('reasoning is a folded block above the answer', function()
  local chat = session.current()
  model.push({ text = 'The answer is 4.', reasoning = 'Two plus two makes four.' })
  turnstoned.ask('What is 2 + 2?')
  H.wait_turns(chat, 9)
  local header = line_of(chat, '💭 Reasoning')
  H.eq(api.nvim_buf_get_lines(chat.buf, header, header + 1, false)[1], 'Two plus two makes four.', 'reasoning')
  H.ok(line_of(chat, 'The answer is 4.') > header + 1, 'the answer follows')
  api.nvim_win_call(assert(require('turnstoned.ui').chat_win()), function()
    H.eq(vim.fn.foldclosed(header), header, 'the reasoning is folded')
  end)
end)

H.test('a failed turn says why in the transcript; the statusline component follows the chat', function()
  local chat = session.current()
  model.push({ error = 401, message = 'invalid api key' })
  turnstoned.ask('Are you there?')
  H.wait_turns(chat, 10)
  H.ok(H.text(chat.buf):find('✗ **turn failed** (unauthorized)', 1, true), 'the error:\n' .. H.text(chat.buf))
  H.ok(turnstoned.status():find('^turnstoned read%-only · scripted · idle · ctx %d+%% of 32.8k'), 'status(): ' .. turnstoned.status())
end)

H.test('a preview the model opens is named in the chat and :TurnstonedPreview shows it', function()
  local chat = session.current()
  vim.fn.writefile({ '# Release notes', '', '- faster start' }, H.workspace .. '/NOTES.md')
  H.stub_select(function(_, labels)
    return H.find(labels, 'Approve')
  end)
  model.push({ tool_calls = { { 'call-pv', 'open_preview', '{"target": "NOTES.md", "kind": "markdown"}' } } },
    { text = 'Opened the notes.' })
  turnstoned.ask('Show me the notes')
  H.wait_turns(chat, 11)
  H.ok(H.text(chat.buf):find('📄 preview (markdown): NOTES.md', 1, true), 'the note:\n' .. H.text(chat.buf))
  local before = api.nvim_get_current_win()
  vim.cmd('TurnstonedPreview')
  H.wait('the preview buffer', function()
    return api.nvim_get_current_win() ~= before
  end)
  H.eq(H.text(0), '# Release notes\n\n- faster start', 'the preview')
  H.eq(vim.bo.filetype, 'markdown', 'its filetype')
  H.eq(vim.bo.modifiable, false, 'read-only')
  vim.cmd.close()
end)

H.test('an image preview is written to a file for the system opener', function()
  local chat = session.current()
  local png = vim.base64.decode('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYPj/HwADAgH/p+FUrwAAAABJRU5ErkJggg==')
  local file = assert(io.open(H.workspace .. '/dot.png', 'wb'))
  file:write(png)
  file:close()
  H.stub_select(function(_, labels)
    return H.find(labels, labels[1]:find('^Approve') and 'Approve' or 'dot.png')
  end)
  model.push({ tool_calls = { { 'call-img', 'open_preview', '{"target": "dot.png"}' } } }, { text = 'There.' })
  turnstoned.ask('Show the image')
  H.wait_turns(chat, 12)
  local opened
  vim.ui.open = function(path)
    opened = path
    return nil, nil
  end
  vim.cmd('TurnstonedPreview') -- two previews now: the picker offers the newest first
  H.wait('the system opener', function()
    return opened ~= nil
  end)
  H.ok(opened:match('%.png$'), 'a .png file: ' .. opened)
  local written = assert(io.open(opened, 'rb'))
  H.eq(written:read('*a') == png, true, 'the bytes')
  written:close()
end)

H.test("a task agent's work is marked and folded under its call; its approval is asked", function()
  local chat = session.current()
  local seen = H.stub_select(function(_, labels)
    return H.find(labels, 'Approve')
  end)
  model.push({ tool_calls = { { 'call-task', 'task_agent', '{"prompt": "Echo a word and report."}' } } },
    { tool_calls = { { 'call-sub', 'bash', '{"command": "touch agent.txt; echo from-the-agent"}' } } },
    { text = 'The agent echoed the word.' },
    { text = 'The task agent reported back.' })
  turnstoned.ask('Delegate it')
  H.wait_turns(chat, 13)
  H.eq(#seen, 2, 'questions: the task_agent call, then the agent\'s bash call')
  local sub = line_of(chat, '↳ ⚙ bash: touch agent.txt; echo from-the-agent')
  H.ok(status_at(chat, sub):find('done', 1, true), 'the agent\'s call ran')
  local agent = line_of(chat, '↳ agent')
  H.eq(api.nvim_buf_get_lines(chat.buf, agent, agent + 1, false)[1], 'The agent echoed the word.', 'its message')
  api.nvim_win_call(assert(require('turnstoned.ui').chat_win()), function()
    H.eq(vim.fn.foldclosed(agent), agent, "the agent's message is folded")
  end)
  H.ok(line_of(chat, 'The task agent reported back.') > agent, 'the session answers after it')
end)

H.test("the model's notify reaches vim.notify", function()
  local chat = session.current()
  model.push({ tool_calls = { { 'call-n', 'notify', '{"message": "The build is green.", "title": "CI"}' } } },
    { text = 'Told you.' })
  local note = H.notified_by('Turnstoned Tell me when the build is green', 'the notification')
  H.wait_turns(chat, 14)
  H.eq(note, 'CI: The build is green.', 'the notification')
end)

H.test('a web preview is shown as its text; gx hands the page to the system viewer without scripts', function()
  local chat = session.current()
  vim.fn.writefile({ '<html><head><title>Guide</title><script>alert("hi")</script></head>',
    '<body><h1>Server guide</h1><p>Run <b>make</b> &amp; wait.</p></body></html>' }, H.workspace .. '/guide.html')
  H.stub_select(function(_, labels)
    return H.find(labels, labels[1]:find('^Approve') and 'Approve' or 'guide.html')
  end)
  model.push({ tool_calls = { { 'call-web', 'open_preview', '{"target": "guide.html"}' } } }, { text = 'Here.' })
  turnstoned.ask('Show the guide')
  H.wait_turns(chat, 15)
  H.ok(H.text(chat.buf):find('📄 preview (web): guide.html', 1, true), H.text(chat.buf))
  local before = api.nvim_get_current_win()
  vim.cmd('TurnstonedPreview')
  H.wait('the preview buffer', function()
    return api.nvim_get_current_win() ~= before
  end)
  H.eq(H.text(0), '# Server guide\n\nRun make & wait.', 'the page as text')
  H.eq(vim.bo.filetype, 'markdown', 'its filetype')
  local opened
  vim.ui.open = function(path)
    opened = path
    return nil, nil
  end
  api.nvim_feedkeys('gx', 'x', false)
  H.ok(opened and opened:match('%.html$'), 'an .html file for the system viewer: ' .. tostring(opened))
  local written = table.concat(vim.fn.readfile(opened), '\n')
  H.ok(written:find("^<meta http%-equiv=\"Content%-Security%-Policy\" content=\"default%-src 'none';"), written)
  H.ok(not written:find('sandbox', 1, true), 'sandbox cannot be set by a meta tag: ' .. written)
  H.ok(written:find('<script>alert("hi")</script>', 1, true), 'the page follows, as it was')
  vim.cmd.close()
end)

H.test('the screen shows folded tool blocks, statuses and usage (artifact)', function()
  local win = assert(require('turnstoned.ui').chat_win())
  local screen = H.screen(win)
  vim.fn.writefile(screen, H.artifacts .. '/chat-screen.txt')
  H.ok(screen[1]:find('ctx', 1, true), 'the winbar shows context usage: ' .. screen[1])
  H.ok(table.concat(screen, '\n'):find('+ ⚙ bash', 1, true), 'a folded tool block')
end)

H.test('resume redraws the history after the daemon restarts', function()
  local old = session.current()
  local sid = old.sid
  local before = H.text(old.buf)
  turnstoned.stop()
  vim.cmd.bwipeout(old.buf)
  turnstoned.new_session()
  H.stub_select(function(items)
    for i, item in ipairs(items) do
      if item.id == sid then
        return i
      end
    end
  end)
  vim.cmd('TurnstonedSessions')
  H.wait('the resumed chat', function()
    return session.peek() and session.peek().sid == sid
  end)
  local chat = session.current()
  local text = H.text(chat.buf)
  for _, needle in ipairs({ 'Say hello', 'Hello from the scripted model.', '⚙ bash: touch streamed.txt; echo streamed-line',
    'streamed-line', 'Denied by user: not on this machine', 'One ran, one was denied.',
    'Thinking about it' }) do
    H.ok(text:find(needle, 1, true), ('%q in the redrawn history:\n%s'):format(needle, text))
  end
  H.ok(#before > 0, 'there was a transcript before')
  vim.fn.writefile(H.screen(assert(require('turnstoned.ui').chat_win())), H.artifacts .. '/resumed-screen.txt')
end)

H.test('approvals of two sessions are asked one at a time; a queued one can be withdrawn', function()
  local questions = require('turnstoned.questions')
  local open = {}
  vim.ui.select = function(items, opts, on_choice)
    open[#open + 1] = { items = items, prompt = opts.prompt, on_choice = on_choice }
  end
  local first = session.current()
  local done_before = first.turns_completed or 0
  model.push({ tool_calls = { { 'call-a', 'bash', '{"command": "touch first.txt; echo from-first"}' } } })
  turnstoned.ask('The first session asks')
  H.wait('the first question', function()
    return #open == 1
  end)
  turnstoned.new_session()
  local second = session.current()
  model.push({ tool_calls = { { 'call-b', 'bash', '{"command": "touch second.txt; echo from-second"}' } } })
  turnstoned.ask('The second session asks')
  H.wait('the second question to wait its turn', function()
    return questions.pending() == 2
  end)
  H.eq(#open, 1, 'questions shown')
  turnstoned.interrupt()
  H.wait_turns(second, 1)
  H.wait('the queued question to be withdrawn', function()
    return questions.pending() == 1
  end)
  model.push({ text = 'The first one ran.' })
  open[1].on_choice(open[1].items[1])
  H.wait_turns(first, done_before + 1)
  H.ok(H.text(first.buf):find('from%-first'), 'the first call ran')
  H.eq(#open, 1, 'the withdrawn question was never shown')
  H.eq(questions.pending(), 0, 'pending')
end)

H.test('input queued behind a running turn is shown as queued after the daemon restarts', function()
  turnstoned.new_session()
  local chat = session.current()
  model.push({ hang = 30, after_text = 'Working on it' })
  turnstoned.ask('First')
  H.wait('the partial answer', function()
    return H.text(chat.buf):find('Working on it', 1, true) ~= nil
  end)
  turnstoned.ask('Second, while it runs')
  local heading = line_of(chat, 'Second, while it runs') - 2
  H.wait('the daemon to say it is queued', function()
    return status_at(chat, heading):find('queued', 1, true) ~= nil
  end)
  local resumed = H.resume_after_restart(chat)
  local row = line_of(resumed, 'Second, while it runs') - 2 -- its heading
  H.ok(status_at(resumed, row):find('the next prompt brings it along', 1, true),
    'the queued note:\n' .. H.text(resumed.buf))
end)

H.run()
