-- What goes with a prompt, against the real daemon and the scripted model: @-mentions and
-- their completion, slash commands, pictures, and the model's live plan.
local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/../helpers.lua')
local api = vim.api

vim.o.columns, vim.o.lines = 160, 50
local model, home = H.with_daemon()

local turnstoned = require('turnstoned')
local session = require('turnstoned.session')
local ui = require('turnstoned.ui')
local complete = require('turnstoned.complete')

vim.fn.mkdir(H.workspace .. '/src', 'p')
vim.fn.writefile({ 'first = 1', 'second = 2', 'third = 3', 'fourth = 4' }, H.workspace .. '/src/calc.py')
vim.fn.writefile({ '# notes' }, H.workspace .. '/README.md')
vim.fn.mkdir(H.workspace .. '/.turnstone/skills', 'p')
vim.fn.writefile({ '---', 'name: x', 'description: Explain like a tour guide', '---',
  'Speak like a tour guide showing the sights.' }, H.workspace .. '/.turnstone/skills/x.md')
vim.cmd.cd(vim.fn.fnameescape(H.workspace))

--- Items of a completion context, asked of the daemon.
---@param ctx turnstoned.CompletionContext
---@return table[]
local function items_of(ctx)
  local got
  complete.items(ctx, function(items)
    got = items or {}
  end)
  H.wait('completion items', function()
    return got ~= nil
  end)
  return got
end

---@param items table[]
---@return string[]
local function words(items)
  return vim.tbl_map(function(i)
    return i.word
  end, items)
end

--- Type `text` into the prompt window and send it the way <CR> does.
---@param text string
local function send_from_prompt(text)
  turnstoned.open()
  local buf = api.nvim_win_get_buf(assert(ui.prompt_win()))
  api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(text, '\n'))
  ui.send_prompt()
end

---@param n integer
---@return string everything the model was sent, as one text
local function sent_text(n)
  local out = {}
  for _, m in ipairs(model.request(n).messages) do
    if type(m.content) == 'string' then
      out[#out + 1] = m.content
    elseif type(m.content) == 'table' then
      for _, part in ipairs(m.content) do
        out[#out + 1] = part.text or ''
      end
    end
  end
  return table.concat(out, '\n')
end

H.test('@ completes the workspace files from workspace/findFiles, the omnifunc too', function()
  H.eq(complete.context('see @ca', 1), { kind = 'file', query = 'ca', col = 6 }, 'the context')
  H.eq(complete.context('mail me@example', 1), nil, 'an address is not a mention')
  H.eq(complete.context('@src/calc.py:2', 1), nil, 'a line range completes nothing')
  local found = items_of({ kind = 'file', query = 'calc' })
  H.eq(words(found), { 'src/calc.py' }, 'the files that match')
  H.eq(found[1].user_data.turnstoned.positions, { 4, 5, 6, 7 }, 'the matched characters')
  H.eq(#items_of({ kind = 'file', query = '' }) >= 2, true, 'an empty query lists files')
  -- The same items on CTRL-X CTRL-O, before the chat has a session (its directory is asked).
  turnstoned.open()
  local buf = api.nvim_win_get_buf(assert(ui.prompt_win()))
  api.nvim_buf_set_lines(buf, 0, -1, false, { 'look at @REA' })
  api.nvim_win_set_cursor(0, { 1, 12 })
  H.eq(vim.bo[buf].omnifunc, "v:lua.require'turnstoned.complete'.omnifunc", 'omnifunc')
  H.eq(complete.omnifunc(1, ''), 9, 'where the path starts')
  H.eq(words(complete.omnifunc(0, 'REA')), { 'README.md' }, 'omnifunc items')
  api.nvim_buf_set_lines(buf, 0, -1, false, {})
  -- / before the first prompt: the commands of the directory, and no session started.
  local listed = words(items_of({ kind = 'command', query = '' }))
  H.ok(vim.tbl_contains(listed, 'compact') and vim.tbl_contains(listed, 'x'), vim.inspect(listed))
  H.eq(session.current().sid, nil, 'the chat has no session yet')
end)

H.test('a sent @file:2-3 reaches the model as those lines; a folder is listed; the text stays', function()
  local before = model.requests()
  model.push({ text = 'Second and third.' })
  send_from_prompt('What do @src/calc.py:2-3 and @src/ hold? Not @nowhere.txt.')
  local chat = session.current()
  H.wait_turns(chat, 1)
  H.eq(model.requests(), before + 1, 'one model request')
  local sent = sent_text(-1)
  H.ok(sent:find('[Mentioned src/calc.py lines 2-3]\n```\nsecond = 2\nthird = 3\n```', 1, true),
    'the mentioned lines:\n' .. sent)
  H.ok(sent:find('[Mentioned folder src: 1 entries]\ncalc.py', 1, true), 'the folder:\n' .. sent)
  H.ok(not sent:find('Mentioned nowhere', 1, true), 'a path that is not there is text only')
  H.ok(sent:find('What do @src/calc.py:2-3 and @src/ hold? Not @nowhere.txt.', 1, true), 'as typed')
  H.ok(H.text(chat.buf):find('What do @src/calc.py:2-3 and @src/ hold?', 1, true), 'the transcript')
end)

H.test('/ completes the built-ins and the workspace skill; a command argument completes too', function()
  H.eq(complete.context('/com', 1), { kind = 'command', query = 'com', col = 2 }, 'a command')
  H.eq(complete.context('/com', 2), nil, 'only at the start of the prompt')
  local all = items_of({ kind = 'command', query = '' })
  for _, name in ipairs({ 'compact', 'undo', 'redo', 'mode', 'model', 'new', 'clear', 'x' }) do
    H.ok(vim.tbl_contains(words(all), name), name .. ' in ' .. vim.inspect(words(all)))
  end
  local x = all[vim.fn.index(words(all), 'x') + 1]
  H.eq({ x.kind, x.menu }, { 'skill', 'Explain like a tour guide' }, 'the skill item')
  H.eq(words(items_of({ kind = 'command', query = 'co' })), { 'compact' }, 'by prefix')
  H.eq(words(items_of(assert(complete.context('/mode fu', 1)))), { 'full-access' }, 'the mode choices')
  H.eq(words(items_of(assert(complete.context('/model ', 1)))), { 'scripted' }, 'model/list for /model')
end)

H.test('/compact runs session/compact instead of a prompt', function()
  local chat = session.current()
  local before, text = model.requests(), H.text(chat.buf)
  local notes = H.record_notify()
  send_from_prompt('/compact')
  H.wait('the compaction to be reported', function()
    return #notes > 0
  end)
  H.eq(notes[1], 'turnstoned: nothing is old enough to compact yet', 'what compact said')
  H.eq(model.requests(), before, 'no model request')
  H.eq(H.text(chat.buf), text, 'no prompt in the transcript')
end)

H.test('/x words reaches the model with the skill note; /mode sets the mode', function()
  local chat = session.current()
  model.push({ text = 'Welcome to the tour.' })
  send_from_prompt('/x the calc module')
  H.wait_turns(chat, 2)
  local request = model.request(-1)
  local sent = sent_text(-1)
  H.ok(sent:find('[The user ran /x: its instructions are now in your system message', 1, true), sent)
  H.ok(sent:find('/x the calc module', 1, true), 'the prompt as typed')
  H.ok(request.messages[1].content:find('Speak like a tour guide', 1, true), 'the skill in the system message')
  H.ok(H.text(chat.buf):find('## You\n\n/x the calc module', 1, true), 'the transcript keeps what was typed')
  send_from_prompt('/mode plan')
  H.wait('the mode to change', function()
    return chat.mode == 'plan'
  end)
  send_from_prompt('/mode read-only')
  H.wait('the mode to change back', function()
    return chat.mode == 'read-only'
  end)
  model.push({ text = 'It is a path.' })
  send_from_prompt('/usr/bin holds what?')
  H.wait_turns(chat, 3)
  H.ok(sent_text(-1):find('/usr/bin holds what?', 1, true), 'a /word that names nothing is a prompt')
end)

H.test(':Turnstoned commands lists the commands; a skill waits in the prompt for its words', function()
  local seen = H.stub_select(function(_, labels)
    return H.find(labels, '/x ')
  end)
  vim.cmd('Turnstoned commands')
  H.wait('the list', function()
    return #seen > 0
  end)
  vim.wait(50)
  H.ok(vim.startswith(seen[1].labels[1], '/compact'), seen[1].labels[1])
  H.ok(vim.iter(seen[1].labels):any(function(l)
    return l:find('^/mode {mode}%s+Change the approval mode') ~= nil
  end), vim.inspect(seen[1].labels))
  local prompt = api.nvim_win_get_buf(assert(ui.prompt_win()))
  H.wait('the prompt to hold the command', function()
    return H.text(prompt) == '/x '
  end)
  vim.cmd.stopinsert()
  api.nvim_buf_set_lines(prompt, 0, -1, false, {})
end)

local PNG = '\137PNG\r\n\26\n' .. 'a picture for the specs'

H.test('a picture without a vision model: the refusal is an error line', function()
  local chat = session.current()
  local file = H.workspace .. '/shot.png'
  local f = assert(io.open(file, 'wb'))
  f:write(PNG)
  f:close()
  H.ok(turnstoned.image(file), 'attached')
  H.ok(ui.prompt_winbar():find('[image: shot.png]', 1, true), 'the prompt winbar: ' .. ui.prompt_winbar())
  local before = model.requests()
  send_from_prompt('What is this?')
  H.wait('the refusal', function()
    return H.text(chat.buf):find('does not take pictures', 1, true) ~= nil
  end)
  local text = H.text(chat.buf)
  H.ok(text:find('What is this?\n[image: shot.png]', 1, true), 'the picture under the prompt:\n' .. text)
  H.ok(text:find('> ✗ the model scripted does not take pictures; if it does, set [model] supports_vision = true (the picture was not sent)', 1, true), text)
  H.eq(model.requests(), before, 'nothing reached the model')
  H.eq(chat.attachments, nil, 'nothing waits for the next prompt')
end)

H.test('a vision model gets the file and the clipboard picture as image_url parts; resume shows them', function()
  require('turnstoned').stop()
  vim.fn.writefile({ '[model]', 'supports_vision = true', '[approvals]', 'mode = "read-only"' },
    home .. '/config/config.toml')
  turnstoned.new_session()
  -- No clipboard tool: it says so.
  local path, wayland = vim.env.PATH, vim.env.WAYLAND_DISPLAY
  local bin = vim.fn.tempname()
  vim.fn.mkdir(bin, 'p')
  vim.env.PATH, vim.env.WAYLAND_DISPLAY = bin, nil
  local notes = H.record_notify()
  turnstoned.paste_image()
  H.ok(notes[1] and notes[1]:find('needs wl-paste (Wayland) or xclip (X11)', 1, true), vim.inspect(notes))
  -- A clipboard that holds a PNG.
  vim.fn.writefile({ '#!/bin/sh', 'printf "\\211PNG\\r\\n\\032\\nfrom the clipboard"' }, bin .. '/wl-paste')
  vim.fn.setfperm(bin .. '/wl-paste', 'rwx------')
  vim.env.PATH, vim.env.WAYLAND_DISPLAY = bin .. ':' .. path, 'wayland-test'
  local pasted
  turnstoned.paste_image(function(ok)
    pasted = ok
  end)
  H.wait('the paste', function()
    return pasted ~= nil
  end)
  vim.env.PATH, vim.env.WAYLAND_DISPLAY = path, wayland
  H.ok(pasted, 'pasted: ' .. vim.inspect(notes))
  H.ok(turnstoned.image('shot.png'), 'a path relative to the current directory')
  model.push({ text = 'Two pictures.' })
  send_from_prompt('Compare these')
  local chat = session.current()
  H.wait_turns(chat, 1)
  local content = model.request(-1).messages[#model.request(-1).messages].content
  H.eq(type(content), 'table', 'the prompt is content parts')
  local urls = vim.tbl_map(function(part)
    return part.type == 'image_url' and part.image_url.url or part.type
  end, content)
  H.eq(urls, { 'text', 'data:image/png;base64,' .. vim.base64.encode('\137PNG\r\n\26\nfrom the clipboard'),
    'data:image/png;base64,' .. vim.base64.encode(PNG) }, 'the parts')
  H.ok(H.text(chat.buf):find('Compare these\n[image: clipboard.png]\n[image: shot.png]', 1, true), H.text(chat.buf))
  local resumed = H.resume_after_restart(chat)
  H.ok(H.text(resumed.buf):find('Compare these\n[image]\n[image]', 1, true), 'resumed:\n' .. H.text(resumed.buf))
end)

---@param step string
---@param status string
local function step(step, status)
  return { step = step, status = status }
end

H.test("the model's plan is a checklist at the top of its turn, ticked off in place; resume redraws it", function()
  local chat = session.current()
  local shown = {}
  require('turnstoned.client').on(require('turnstoned.protocol').methods.plan_updated, function()
    shown[#shown + 1] = H.text(chat.buf)
  end)
  model.push(
    { tool_calls = { { 'p1', 'update_plan', vim.json.encode({ steps = {
      step('Read the code', 'in_progress'), step('Fix the bug', 'pending'), step('Run the tests', 'pending') } }) } } },
    { tool_calls = { { 'p2', 'update_plan', vim.json.encode({ explanation = 'found it', steps = {
      step('Read the code', 'done'), step('Fix the bug', 'in_progress'), step('Run the tests', 'pending') } }) } },
      start_delay = 0.1 },
    { text = 'Fixed.' })
  local ended = chat.turns_completed or 0
  send_from_prompt('Fix the bug')
  H.wait_turns(chat, ended + 1)
  H.eq(#shown, 2, 'plan updates')
  local first = table.concat({ '## You', '', 'Fix the bug', '', '📋 Plan · 0 of 3 done', '- [>] Read the code',
    '- [ ] Fix the bug', '- [ ] Run the tests', '', '## turnstoned' }, '\n')
  H.ok(shown[1]:find(first, 1, true), 'the first checklist, under the prompt:\n' .. shown[1])
  local second = table.concat({ 'Fix the bug', '', '📋 Plan · 1 of 3 done', '  found it', '- [x] Read the code',
    '- [>] Fix the bug', '- [ ] Run the tests', '', '## turnstoned' }, '\n')
  local text = H.text(chat.buf)
  H.ok(text:find(second, 1, true), 'updated in place:\n' .. text)
  H.eq(select(2, text:gsub('📋 Plan', '')), 1, 'one checklist')
  H.ok(text:find('Fixed.', 1, true), 'the answer')
  local win = assert(ui.chat_win())
  vim.fn.writefile(H.screen(win), H.artifacts .. '/plan-screen.txt')
  local resumed = H.resume_after_restart(chat)
  local again = H.text(resumed.buf)
  H.ok(again:find('Fix the bug\n\n📋 Plan · 1 of 3 done\n- [x] Read the code', 1, true), 'resumed:\n' .. again)
  local cwin = assert(ui.chat_win())
  H.eq(api.nvim_win_get_buf(cwin), resumed.buf, 'the resumed chat is shown')
  H.eq(api.nvim_win_get_cursor(cwin)[1], api.nvim_buf_line_count(resumed.buf), 'the resumed chat is at its end')
  model.push({ text = 'Still here.\nAnd following.' })
  turnstoned.ask('Anything else?')
  H.wait_turns(resumed, 1)
  H.eq(api.nvim_win_get_cursor(cwin)[1], api.nvim_buf_line_count(resumed.buf), 'it follows the stream')
end)

H.run()
