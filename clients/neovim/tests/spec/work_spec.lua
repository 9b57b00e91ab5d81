-- Work beyond one turn against the real daemon: watches (listed, cancelled, firing into a
-- turn the daemon starts itself) and compaction of the model's context.
local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/../helpers.lua')
local api = vim.api

vim.o.columns, vim.o.lines = 180, 60
-- One recent turn is kept word for word, so a short session has something to compact.
local model = H.with_daemon({ '[session]', 'keep_recent_turns = 1' })

local turnstoned = require('turnstoned')
local session = require('turnstoned.session')
local client = require('turnstoned.client')
local methods = require('turnstoned.protocol').methods

---@param args table
---@return string
local function watch_call(args)
  return vim.json.encode(vim.tbl_extend('force', { action = 'create' }, args))
end

---@param chat turnstoned.Chat
---@param needle string
---@return integer lnum
local function line_of(chat, needle)
  for i, line in ipairs(api.nvim_buf_get_lines(chat.buf, 0, -1, false)) do
    if line:find(needle, 1, true) then
      return i
    end
  end
  error(('no line with %q in\n%s'):format(needle, H.text(chat.buf)), 2)
end

H.test(':TurnstonedWatches lists the watches the model set up and cancels the one picked', function()
  H.stub_select(function(_, labels)
    return H.find(labels, 'Approve')
  end)
  model.push({ tool_calls = {
    { 'call-w1', 'watch', watch_call({ name = 'ready', command = 'echo ready', poll_every = '10s',
      stop_on = '"ready" in output' }) },
    { 'call-w2', 'watch', watch_call({ name = 'hourly', command = 'echo tick', poll_every = '1h' }) },
  } }, { text = 'I am watching both.' })
  turnstoned.ask('Tell me when it is ready')
  H.wait_turns(session.current(), 1)
  local seen = H.stub_select(function(_, labels)
    return labels[1]:find('^Cancel') and 1 or H.find(labels, 'hourly')
  end)
  local note = H.notified_by('TurnstonedWatches', 'the cancellation')
  H.eq(#seen[1].labels, 2, 'watches listed: ' .. vim.inspect(seen[1].labels))
  H.ok(seen[1].labels[1]:find('^ready%s+every 10s · poll 0/100 · next %d%d:%d%d · %$ echo ready$'), seen[1].labels[1])
  H.ok(seen[1].labels[2]:find('^hourly%s+every 1h ', 1), seen[1].labels[2])
  H.eq(note, 'turnstoned: cancelled the watch hourly', 'the note')
  local _, listed = client.request_sync(methods.watch_list, { sessionId = session.current().sid })
  H.eq(vim.tbl_map(function(w)
    return w.name
  end, listed.watches), { 'ready' }, 'the watches left')
end)

H.test('a watch that fires is shown in the chat, and the turn the daemon starts has its own heading', function()
  local chat = session.current()
  model.push({ text = 'It is ready now.' })
  H.wait('the watch to fire (its first poll is 10 s after it was set up)', function()
    return H.text(chat.buf):find('⏱ watch ready: condition met', 1, true) ~= nil
  end, 30000)
  H.wait_turns(chat, 2)
  local report = line_of(chat, '⏱ watch ready: condition met: "ready" in output (poll 1 of 100)')
  local text = H.text(chat.buf)
  H.ok(text:find('⏱ watch ready[^\n]*\n````text\n%[Watch "ready" — poll #1/100'), 'the report:\n' .. text)
  H.ok(text:find('\n## turnstoned\n\nIt is ready now.', 1, true), 'a new heading for the answer:\n' .. text)
  H.ok(line_of(chat, 'It is ready now.') > report, 'the answer follows the report')
  api.nvim_win_call(assert(require('turnstoned.ui').chat_win()), function()
    H.eq(vim.fn.foldclosed(report), report, 'the report is folded')
  end)
end)

H.test(':TurnstonedCompact draws a divider with the figures and the summary folded; the winbar follows', function()
  local chat = session.current()
  local before = chat.context and chat.context.tokens
  H.ok(before, 'the chat knows its context size')
  model.push({ text = 'The user asked to be told when a build is ready; a watch said it was.' })
  local note = H.notified_by('TurnstonedCompact', 'the compaction')
  H.eq(note, 'turnstoned: compacted', 'the note')
  H.wait('the divider', function()
    return H.text(chat.buf):find('context compacted (manual)', 1, true) ~= nil
  end)
  local text = H.text(chat.buf)
  H.ok(text:find('──── context compacted %(manual%) [^\n]*\n%d+ earlier messages summarised · context [%d.k]+ → [%d.k]+ tokens of 32.8k · the summary cost [%d.k]+ tokens\n'),
    'the divider and figures:\n' .. text)
  local summary = line_of(chat, '📝 Summary the model reads from here on')
  H.eq(api.nvim_buf_get_lines(chat.buf, summary, summary + 1, false)[1],
    'The user asked to be told when a build is ready; a watch said it was.', 'the summary')
  api.nvim_win_call(assert(require('turnstoned.ui').chat_win()), function()
    H.eq(vim.fn.foldclosed(summary), summary, 'the summary is folded')
  end)
  H.ok(chat.context.tokens < before, ('the context shrank: %d → %d'):format(before, chat.context.tokens))
  H.ok(require('turnstoned.ui').describe(chat):find('idle', 1, true), 'the winbar state')
  local _, usage = require('turnstoned.ui').describe(chat)
  H.ok(usage:find(('ctx %d%%'):format(math.floor(100 * chat.context.tokens / chat.context.window)), 1, true), usage)
end)

H.test('a resumed session shows where its context was compacted and what the watch reported (artifact)', function()
  local resumed = H.resume_after_restart(session.current())
  local text = H.text(resumed.buf)
  H.ok(text:find('──── context compacted [^\n]*\nContext compacted: %d+ earlier messages were summarised'),
    'the divider and the sentence:\n' .. text)
  H.ok(text:find('📝 Summary the model reads from here on\nThe user asked', 1, true), 'the summary:\n' .. text)
  H.ok(text:find('⏱ Watch "ready" — poll #1/100', 1, true), 'the watch report:\n' .. text)
  H.ok(text:find('\n## turnstoned\n\nIt is ready now.', 1, true), "the daemon's turn under its heading:\n" .. text)
  vim.fn.writefile(H.screen(assert(require('turnstoned.ui').chat_win())), H.artifacts .. '/work-screen.txt')
end)

H.run()
