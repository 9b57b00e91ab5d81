-- Pieces that need no daemon: configuration, selections, labels, transcript writes.
local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/../helpers.lua')
local api = vim.api

local config = require('turnstoned.config')

---@param fn fun()
---@return string
local function error_of(fn)
  local ok, err = pcall(fn)
  H.ok(not ok, 'an error')
  return tostring(err)
end

H.test('defaults work with no configuration at all', function()
  vim.g.turnstoned = nil
  local c = config.get()
  H.eq(c.cmd, { 'turnstoned' }, 'cmd')
  H.eq(c.layout, 'vertical', 'layout')
  H.eq(c.keymaps.send, '<CR>', 'send key')
end)

H.test('setup() wins over vim.g.turnstoned, and a command list replaces the default', function()
  vim.g.turnstoned = { layout = 'float', cmd = { '/opt/t/bin/turnstoned', '--tool-search', 'on' } }
  H.eq(config.get().layout, 'float', 'layout from vim.g')
  H.eq(config.get().cmd, { '/opt/t/bin/turnstoned', '--tool-search', 'on' }, 'cmd from vim.g')
  require('turnstoned').setup({ layout = 'tab', keymaps = { close = false } })
  H.eq(config.get().layout, 'tab', 'layout from setup()')
  H.eq(config.get().keymaps.close, false, 'a disabled key')
  H.eq(config.get().keymaps.send, '<CR>', 'the other keys keep their defaults')
  require('turnstoned').setup({})
  vim.g.turnstoned = nil
end)

H.test('bad options are named', function()
  H.ok(error_of(function()
    require('turnstoned').setup({ layuot = 'float' })
  end):find('unknown option layuot', 1, true), 'a misspelt option')
  H.ok(error_of(function()
    require('turnstoned').setup({ layout = 'sideways' })
  end):find('option layout must be', 1, true), 'a bad value')
  H.ok(error_of(function()
    require('turnstoned').setup({ cmd = 'turnstoned' })
  end):find('option cmd must be a non-empty list of strings', 1, true), 'cmd as a string')
  H.ok(error_of(function()
    require('turnstoned').setup({ keymaps = { send = 1 } })
  end):find('keymaps.send', 1, true), 'a bad key')
  H.ok(error_of(function()
    require('turnstoned').setup({ mode = 'yolo' })
  end):find("option mode must be 'read-only', 'auto', 'full-access' or 'plan'", 1, true), 'a bad mode')
  require('turnstoned').setup({})
end)

H.test('a selection is sent with its path, line range and code', function()
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir .. '/src', 'p')
  vim.fn.writefile({ 'local a = 1', 'local b = 2', 'return a + b' }, dir .. '/src/sum.lua')
  vim.cmd.cd(dir)
  vim.cmd.edit('src/sum.lua')
  H.eq(require('turnstoned').selection_lines(0, 2, 3), {
    '`src/sum.lua`, lines 2-3:', '', '```lua', 'local b = 2', 'return a + b', '```',
  }, 'lines')
  H.eq(require('turnstoned').selection_lines(0, 1, 1)[1], '`src/sum.lua`, line 1:', 'one line')
  vim.g.turnstoned = { cwd = '/elsewhere' } -- a file outside the session's directory: absolute
  H.eq(require('turnstoned').selection_lines(0, 1, 1)[1],
    ('`%s`, line 1:'):format(vim.fs.normalize(dir .. '/src/sum.lua')), 'outside')
  vim.g.turnstoned = nil
end)

H.test('the sessions picker lists a new session first, then sessions with title and place', function()
  local choices = require('turnstoned.pickers').session_choices({
    { sessionId = 's1', title = 'Fix the tests', cwd = '/src/app', kind = 'interactive',
      createdAt = '2025-01-02T03:04:05Z', updatedAt = '2025-01-02T03:14:05Z', status = 'idle' },
  })
  H.eq(choices[1].id, '', 'the new-session entry')
  H.eq(choices[2].id, 's1', 'the session')
  H.ok(choices[2].label:find('2025-01-02 03:14', 1, true), 'time: ' .. choices[2].label)
  H.ok(choices[2].label:find('Fix the tests', 1, true), 'title')
  H.ok(choices[2].label:find('/src/app', 1, true), 'directory')
end)

H.test('transcript writes keep a reader cursor in place and follow one at the end', function()
  local tb = require('turnstoned.textbuf')
  local buf = api.nvim_create_buf(false, true)
  api.nvim_buf_set_lines(buf, 0, -1, false, { 'one', 'two', 'three' })
  vim.cmd('split')
  local reader = api.nvim_get_current_win()
  api.nvim_win_set_buf(reader, buf)
  vim.cmd('split')
  local follower = api.nvim_get_current_win()
  api.nvim_win_set_buf(follower, buf)
  api.nvim_win_set_cursor(reader, { 2, 1 })
  api.nvim_win_set_cursor(follower, { 3, 0 })
  tb.edit(buf, true, function()
    tb.append(buf, { 'four', 'five' })
  end)
  H.eq(api.nvim_win_get_cursor(reader), { 2, 1 }, 'the reader')
  H.eq(api.nvim_win_get_cursor(follower), { 5, 0 }, 'the follower')
  H.eq(vim.bo[buf].modifiable, false, 'read-only again')
  tb.edit(buf, false, function()
    tb.append(buf, { 'six' })
  end)
  H.eq(api.nvim_win_get_cursor(follower), { 5, 0 }, 'no following when auto_scroll is off')
end)

H.test('every layout opens a chat window with a prompt under it, and q closes both', function()
  local ui = require('turnstoned.ui')
  for _, layout in ipairs({ 'vertical', 'horizontal', 'float', 'tab' }) do
    require('turnstoned').setup({ layout = layout })
    local tabs = #api.nvim_list_tabpages()
    local chat = require('turnstoned').open()
    local chat_win, prompt_win = ui.chat_win(), ui.prompt_win()
    H.ok(chat_win and prompt_win, layout .. ': both windows')
    ---@cast chat_win integer
    ---@cast prompt_win integer
    H.eq(api.nvim_win_get_buf(chat_win), chat.buf, layout .. ': the chat buffer')
    H.eq(api.nvim_get_current_win(), prompt_win, layout .. ': the prompt has the cursor')
    local floating = api.nvim_win_get_config(chat_win).relative ~= ''
    H.eq(floating, layout == 'float', layout .. ': floating')
    if not floating then
      local chat_pos, prompt_pos = api.nvim_win_get_position(chat_win), api.nvim_win_get_position(prompt_win)
      H.ok(prompt_pos[1] > chat_pos[1] and prompt_pos[2] == chat_pos[2], layout .. ': the prompt is below')
    end
    H.eq(#api.nvim_list_tabpages(), tabs + (layout == 'tab' and 1 or 0), layout .. ': tab pages')
    api.nvim_feedkeys('q', 'x', false)
    H.eq(ui.chat_win(), nil, layout .. ': the chat closed')
    H.eq(#api.nvim_list_tabpages(), tabs, layout .. ': back to the tab pages before')
  end
  require('turnstoned').setup({})
end)

H.test("the daemon's stderr is read back from the LSP log", function()
  local path = vim.lsp.log.get_filename()
  vim.fn.mkdir(vim.fs.dirname(path), 'p')
  vim.fn.writefile({
    [=[[ERROR][2026-01-01 10:00:00] ...p/_transport.lua:36	"rpc"	"/opt/bin/turnstoned"	"stderr"	'10:00:00 WARNING x: "quoted" word\n']=],
    [=[[ERROR][2026-01-01 10:00:01] ...p/_transport.lua:36	"rpc"	"/opt/bin/other"	"stderr"	"not ours\n"]=],
    [=[[ERROR][2026-01-01 10:00:02] ...p/_transport.lua:36	"rpc"	"/opt/bin/turnstoned"	"stderr"	"second line\n"]=],
  }, path, 'a')
  H.eq(require('turnstoned.log').daemon_stderr('/opt/bin/turnstoned', 10),
    { '10:00:00 WARNING x: "quoted" word', 'second line' }, 'stderr lines')
end)

H.test('an approval from a session not open here names that session', function()
  local seen = H.stub_select(function(_, labels)
    return H.find(labels, 'Approve')
  end)
  local answer
  require('turnstoned.approval').request({
    sessionId = 'child0123456789', turnId = 't', cycleId = 'c',
    items = { { callId = 'x', tool = 'bash', header = '⚙ bash: make', needsApproval = true,
      approvalLabel = 'bash' } },
  }, function(result)
    answer = result
  end)
  H.wait('the answer', function()
    return answer ~= nil
  end)
  H.eq(seen[1].prompt, '[session child012] ⚙ bash: make', 'the question')
  H.eq(answer, { decision = 'approve' }, 'the answer')
end)

H.test("an escalation is asked with the model's reason for leaving the sandbox", function()
  local seen = H.stub_select(function(_, labels)
    return H.find(labels, 'Deny')
  end)
  H.stub_input('')
  local answer, details
  require('turnstoned.approval').request({
    sessionId = 'child0123456789', turnId = 't', cycleId = 'c-esc',
    items = { { callId = 'e', tool = 'bash', header = '⚙ bash: npm install', needsApproval = true,
      approvalLabel = 'bash', sandbox = 'escalated',
      escalation = 'the sandbox stopped a network connection; reason: it must fetch the packages',
      verdict = { risk = 'medium', recommendation = 'review', rule = 'network', reason = 'reaches the network' } } },
  }, function(result)
    answer = result
  end)
  H.wait('the details window', function()
    for _, win in ipairs(api.nvim_list_wins()) do
      local buf = api.nvim_win_get_buf(win)
      if api.nvim_buf_get_name(buf):find('turnstoned://approval/c-esc', 1, true) then
        details = H.text(buf)
        return true
      end
    end
  end)
  H.wait('the answer', function()
    return answer ~= nil
  end)
  H.ok(seen[1].prompt:find('⚙ bash: npm install  [escalated]  [medium: network] — leaves the sandbox: '
    .. 'the sandbox stopped a network connection; reason: it must fetch the packages', 1, true), seen[1].prompt)
  H.ok(details:find('  leaves the sandbox: the sandbox stopped', 1, true), details)
  H.eq(answer.decision, 'deny', 'the answer')
end)

H.test('a file is rebuilt from its diff as it was before the turn; not when it changed since', function()
  local changes = require('turnstoned.changes')
  local diff = table.concat({ '--- a/f.txt', '+++ b/f.txt', '@@ -1,3 +1,3 @@', ' one', '-two', '+TWO', ' three',
    '@@ -7,2 +7,3 @@', ' seven', ' eight', '+eight and a half', '' }, '\n')
  local after = { 'one', 'TWO', 'three', 'four', 'five', 'six', 'seven', 'eight', 'eight and a half' }
  H.eq(changes.unpatch(after, diff), { 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight' }, 'before')
  after[2] = 'changed since'
  H.eq(changes.unpatch(after, diff), nil, 'a file that no longer reads as the diff left it')
  local created = table.concat({ '--- /dev/null', '+++ b/n.txt', '@@ -0,0 +1,2 @@', '+a', '+b' }, '\n')
  H.eq(changes.unpatch({ 'a', 'b' }, created), {}, 'a created file was empty')
  local deleted = table.concat({ '--- a/d.txt', '+++ /dev/null', '@@ -1,2 +0,0 @@', '-a', '-b' }, '\n')
  H.eq(changes.unpatch({}, deleted), { 'a', 'b' }, 'a deleted file comes back')
end)

H.test('the drop key finds the hunk under the cursor on either side, removed lines too', function()
  local review = require('turnstoned.review')
  local old = { 'a', 'b', 'c', 'd' }
  local new = { 'a', 'c', 'd', 'e' } -- b removed, e added
  H.eq(review.hunk_at(old, new, 1, 'new'), { 2, 1, 1, 0 }, 'the removal, from the line before it')
  H.eq(review.hunk_at(old, new, 2, 'new'), { 2, 1, 1, 0 }, 'the removal, from the line after it')
  H.eq(review.hunk_at(old, new, 4, 'new'), { 4, 0, 4, 1 }, 'the addition')
  H.eq(review.hunk_at(old, new, 2, 'old'), { 2, 1, 1, 0 }, 'the removal, on the old side')
  H.eq(review.hunk_at(old, old, 1, 'new'), nil, 'no change')
  H.eq(review.text_of({ 'x', 'y' }, 'p\n'), 'x\ny\n', 'a final newline as the proposal has one')
  H.eq(review.text_of({ 'x', 'y' }, 'p'), 'x\ny', 'none when it has none')
end)

H.test('a web page becomes its text: no script, style or comment, entities decoded, blocks on lines', function()
  local page = '<!DOCTYPE html><html><head><title>Guide</title><style>body{color:red}</style>'
    .. '<script>alert("x")</script></head><body><h1>Server guide</h1><p>Start it with <b>make run</b> '
    .. '&amp; wait &#8212; or &#x41;.</p><ul><li>fast</li><li>small</li></ul><!-- hidden <p>x</p> -->'
    .. '<SCRIPT type="x">document.write("no")</SCRIPT><header>Top</header><p>a < b and c > d</p>'
    .. '<script>never closed <p>gone</p>'
  H.eq(require('turnstoned.html').to_text(page),
    '# Server guide\n\nStart it with make run & wait — or A.\n\n- fast\n- small\n\nTop\n\na < b and c > d',
    'the text')
end)

H.test('a web page of hostile shapes takes time in proportion to its size', function()
  local html = require('turnstoned.html')
  local function ms(piece, bytes)
    local page = string.rep(piece, math.floor(bytes / #piece))
    local t0 = vim.uv.hrtime()
    html.to_text(page)
    return (vim.uv.hrtime() - t0) / 1e6
  end
  for _, piece in ipairs({ '<', '<script', '<head', '<!--', '&aaaaaaa', '<a' }) do
    local small, large = ms(piece, 200000), ms(piece, 800000)
    -- Quadratic work would take 16 times as long for four times the input.
    H.ok(large < 10 * small + 200, ('%q: %.0f ms for 200 kB, %.0f ms for 800 kB'):format(piece, small, large))
  end
end)

H.test('arguments to edit are one key per line, and only a JSON object is taken back', function()
  local edit = require('turnstoned.edit')
  H.eq(edit.pretty({ path = 'a.txt', content = 'x\ny' }), { '{', '  "content": "x\\ny",', '  "path": "a.txt"', '}' },
    'pretty')
  H.eq(edit.parse(edit.pretty({ path = 'a.txt', content = 'x\ny' })), { path = 'a.txt', content = 'x\ny' }, 'parsed')
  H.eq(select(2, edit.parse({ '[1, 2]' })), 'the arguments must be a JSON object', 'an array')
  H.ok(select(2, edit.parse({ '{"path": ' })):find('^not JSON'), 'broken JSON')
end)

H.test('Always lists the rules it saves, and is not offered when it would save none', function()
  local seen = H.stub_select(function()
    return nil -- dismissed: denied
  end)
  local function ask(items)
    local answer
    require('turnstoned.approval').request({ sessionId = 'other', turnId = 't', cycleId = 'c' .. #seen, items = items },
      function(result)
        answer = result
      end)
    H.wait('the answer', function()
      return answer ~= nil
    end)
    return seen[#seen].labels
  end
  local function call(id, header, rules)
    return { callId = id, tool = 'bash', header = header, needsApproval = true, approvalLabel = 'bash', grantRules = rules,
      verdict = { risk = #rules > 0 and 'low' or 'high', recommendation = 'review', rule = 'r', reason = 'why' } }
  end
  local labels = ask({ call('a', '⚙ bash: git status', { 'bash:git status' }), call('b', '⚙ bash: npm test', { 'bash:npm test' }) })
  H.eq(labels[2], 'Always all 2 (allow bash:git status, bash:npm test for this session)', 'two rules')
  labels = ask({ call('a', '⚙ bash: ls', { 'bash:@read-only' }), call('b', '⚙ bash: rm -rf x', {}) })
  H.eq(labels[2], 'Always all 2 (allow bash:@read-only for this session); 1 call still asks each time', 'one saves none')
  labels = ask({ call('a', '⚙ bash: rm -rf x', {}) })
  H.eq(labels, { 'Approve', 'Deny…' }, 'nothing to save, nothing to edit (its arguments are unknown)')
end)

H.test('the statusline component is empty before the first prompt', function()
  H.eq(require('turnstoned').status(), '', 'status()')
end)

H.test('a buffer is given as writing it would make the file: the final newline as eol and fixeol say', function()
  local editor = require('turnstoned.editor')
  local buf = api.nvim_create_buf(true, false)
  api.nvim_buf_set_lines(buf, 0, -1, false, { 'one', 'two' })
  H.eq(editor.text(buf), 'one\ntwo\n', 'eol')
  vim.bo[buf].eol, vim.bo[buf].fixeol = false, false
  H.eq(editor.text(buf), 'one\ntwo', 'noeol nofixeol')
  vim.bo[buf].fixeol = true
  H.eq(editor.text(buf), 'one\ntwo\n', 'fixeol adds it')
  vim.bo[buf].binary, vim.bo[buf].eol = true, false
  H.eq(editor.text(buf), 'one\ntwo', 'but not to a binary file')
  api.nvim_buf_set_lines(buf, 0, -1, false, {})
  H.eq(editor.text(buf), '', 'an empty buffer')
  vim.cmd.bwipeout({ buf, bang = true })
end)

H.test('selections and diagnostics count characters in UTF-16, as LSP does', function()
  local editor = require('turnstoned.editor')
  local buf = api.nvim_create_buf(true, false)
  api.nvim_buf_set_lines(buf, 0, -1, false, { 'naïve 😀 x', 'second' })
  local sel = assert(editor.region(buf, { 0, 1, 8, 0 }, { 0, 1, 8, 0 }, 'v')) -- "😀" (bytes 8-11)
  H.eq(sel.text, '😀', 'the text')
  H.eq(sel.range, { startLine = 0, startCharacter = 6, endLine = 0, endCharacter = 8 }, 'the range')
  local lines = assert(editor.region(buf, { 0, 1, 1, 0 }, { 0, 2, 1, 0 }, 'V'))
  H.eq(lines.text, 'naïve 😀 x\nsecond', 'linewise text')
  H.eq(lines.range.endCharacter, 6, 'a linewise range ends at the end of its last line')
  H.eq(editor.utf16('😀 x', 5), 3, 'after the emoji and the space')
  H.eq(editor.byte('😀 x', 3), 5, 'and back')
  vim.cmd.bwipeout({ buf, bang = true })
end)

H.test('editor requests with bad params are answered with errors, never raised', function()
  local handlers = require('turnstoned.editor').handlers
  local function ask(method, params)
    local result, err
    handlers[method](params, function(r, e)
      result, err = r, e
    end)
    return result, err
  end
  local _, err = ask('editor/symbol', { action = 'rename', path = '/x', line = 0, character = 0 })
  H.eq(err and err.code, vim.lsp.protocol.ErrorCodes.InvalidParams, 'an unknown action')
  _, err = ask('editor/diagnostics', { path = 3 })
  H.eq(err and err.code, vim.lsp.protocol.ErrorCodes.InvalidParams, 'a path that is no string')
  local result = ask('editor/symbol', { action = 'definition', path = '/no/such/file.py', line = 0, character = 0 })
  H.eq(result, { locations = {} }, 'a file that does not exist has no locations')
  result = ask('editor/diagnostics', { path = '/no/such/file.py' })
  H.eq(result, { diagnostics = {} }, 'nor diagnostics')
end)

H.test('the instruction files are named relative to the session, truncated ones marked', function()
  local chat = require('turnstoned.chat').new('sess-instructions')
  chat.info = { cwd = '/home/u/proj' }
  chat.instructions = {
    { path = vim.fn.expand('~') .. '/.config/turnstone/AGENTS.md', chars = 10 },
    { path = '/home/u/proj/AGENTS.md', chars = 100 },
    { path = '/home/u/proj/src/CLAUDE.md', chars = 32000, truncated = true },
  }
  H.eq(chat:instructions_label(), '~/.config/turnstone/AGENTS.md, AGENTS.md, src/CLAUDE.md (truncated)', 'the label')
  chat.instructions = {}
  H.eq(chat:instructions_label(), '', 'none')
end)

H.test('@-mentions: a path, a line or a range, a folder; punctuation and addresses are not paths', function()
  local m = require('turnstoned.mentions')
  H.eq(m.parse_word('src/a.py:10-40,'), { path = 'src/a.py', startLine = 10, endLine = 40 }, 'a range')
  H.eq(m.parse_word('a.py:7'), { path = 'a.py', startLine = 7, endLine = 7 }, 'a line')
  H.eq(m.parse_word('a.py:40-10'), { path = 'a.py', startLine = 10, endLine = 40 }, 'a range the wrong way round')
  H.eq(m.parse_word('notes.md.'), { path = 'notes.md' }, 'the sentence ends')
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir .. '/src', 'p')
  vim.fn.writefile({ 'x' }, dir .. '/src/a.py')
  H.eq(m.items('see @src/a.py:2-3 and (@src/) but not me@src/a.py, @gone.py or @src/a.py:2-3 again', dir), {
    { type = 'mention', path = 'src/a.py', startLine = 2, endLine = 3 },
    { type = 'mention', path = 'src' },
  }, 'the mentions of a prompt')
  H.eq(m.typing('look at @sr'), 'sr', 'typing a mention')
  H.eq(select(2, m.typing('@')), 1, 'where its letters start')
  H.eq(m.typing('mail a@b'), nil, 'an address')
end)

H.test("the sessions picker puts this directory's sessions first, newest first in each part", function()
  local function s(id, cwd)
    return { sessionId = id, cwd = cwd, status = 'idle', updatedAt = '2025-01-01T00:00:00Z' }
  end
  local choices = require('turnstoned.pickers').session_choices({
    s('a', '/elsewhere'), s('b', '/here'), s('c', '/other'), s('d', '/here') }, '/here')
  H.eq(vim.tbl_map(function(c)
    return c.id
  end, choices), { '', 'b', 'd', 'a', 'c' }, 'the order')
end)

H.test('a plan is a checklist: done, in progress, pending', function()
  H.eq(require('turnstoned.plan').lines({
    { step = 'Read', status = 'done' }, { step = 'Fix\nit', status = 'in_progress' }, { step = 'Test', status = 'pending' },
  }, 'why'), { '📋 Plan · 1 of 3 done', '  why', '- [x] Read', '- [>] Fix it', '- [ ] Test' }, 'the lines')
end)

H.test('the prompt winbar names the attached pictures and the keys; keymaps can be remapped or dropped', function()
  vim.g.turnstoned = { keymaps = { interrupt = '<C-x>', close = false } }
  local chat = require('turnstoned.session').current()
  chat.attachments = { { name = 'shot.png', item = { type = 'image', path = '/tmp/shot.png' } } }
  H.eq(require('turnstoned.ui').prompt_winbar(), ' prompt · [image: shot.png]%=<CR> <C-s> send · <C-x> stop ', 'winbar')
  chat.attachments = nil
  vim.g.turnstoned = nil
end)

H.run()
