-- Several clients on one session (protocol 1.15), against the real resident daemon: the
-- plugin reaches it through `turnstoned attach`, and so does the other editor, a raw
-- second connection this spec speaks JSON-RPC to itself.
local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/../helpers.lua')
local api = vim.api

vim.o.columns, vim.o.lines = 160, 50
local model = H.model()
local home = H.configure(model)
-- The resident daemon outlives its clients; it ends shortly after the last one leaves.
local attach = { H.daemon, 'attach', '--idle-timeout', '3' }
vim.g.turnstoned = vim.tbl_extend('force', vim.g.turnstoned, { cmd = attach })

local turnstoned = require('turnstoned')
local session = require('turnstoned.session')
local client = require('turnstoned.client')
local methods = require('turnstoned.protocol').methods

-- ---------------------------------------------------------------- the other editor

--- A raw connection to the resident daemon: Content-Length frames over `attach`'s stdio.
local other = { next_id = 0, inbox = '', notifications = {}, responses = {} }
other.proc = vim.system(attach, {
  stdin = true,
  env = vim.g.turnstoned.env,
  stdout = function(_, data)
    other.inbox = other.inbox .. (data or '')
  end,
})

--- Take the whole frames received so far out of the inbox.
function other.read()
  while true do
    local header_end = other.inbox:find('\r\n\r\n', 1, true)
    local length = header_end and tonumber(other.inbox:sub(1, header_end):match('Content%-Length:%s*(%d+)'))
    if not length or #other.inbox < header_end + 3 + length then
      return
    end
    local msg = vim.json.decode(other.inbox:sub(header_end + 4, header_end + 3 + length),
      { luanil = { object = true } })
    other.inbox = other.inbox:sub(header_end + 4 + length)
    if msg.method and msg.id == nil then
      table.insert(other.notifications, msg)
    elseif msg.id ~= nil and msg.method == nil then
      other.responses[msg.id] = msg
    end
  end
end

---@param msg table
function other.send(msg)
  msg.jsonrpc = '2.0'
  local body = vim.json.encode(msg)
  other.proc:write(('Content-Length: %d\r\n\r\n%s'):format(#body, body))
end

--- A request, answered: its result (an error fails the spec).
---@param method string
---@param params? table
---@return table
function other.request(method, params)
  other.next_id = other.next_id + 1
  local id = other.next_id
  other.send({ id = id, method = method, params = params or vim.empty_dict() })
  H.wait('the answer to ' .. method, function()
    other.read()
    return other.responses[id] ~= nil
  end)
  local r = other.responses[id]
  H.ok(r.error == nil, method .. ' answered: ' .. vim.inspect(r.error))
  return r.result
end

--- The text the other editor has seen of session `sid`'s answers.
---@param sid string
---@return string
function other.answer(sid)
  other.read()
  local text = ''
  for _, n in ipairs(other.notifications) do
    if n.method == methods.item_agent_message_delta and n.params.sessionId == sid then
      text = text .. n.params.delta
    end
  end
  return text
end

---@param sid string
---@param prompt string
---@return table result
function other.prompt(sid, prompt)
  return other.request(methods.turn_start, { sessionId = sid, input = { { type = 'text', text = prompt } } })
end

other.request(methods.initialize, { processId = vim.NIL, capabilities = vim.empty_dict() })
other.send({ method = methods.initialized, params = vim.empty_dict() })

H.cleanup = function()
  turnstoned.stop()
  other.proc:write(nil)
  other.proc:wait(5000)
  model.stop()
  vim.fn.delete(home, 'rf')
end

-- ---------------------------------------------------------------- specs

--- How many times `needle` is in `text`.
---@param text string
---@param needle string
---@return integer
local function count(text, needle)
  local n, at = 0, 1
  while true do
    local found = text:find(needle, at, true)
    if not found then
      return n
    end
    n, at = n + 1, found + #needle
  end
end

local sid ---@type string
local chat ---@type turnstoned.Chat

H.test('resuming a session mid-turn shows its prompt and the whole answer: what it missed, then the rest', function()
  model.push({ gated = 'half', before = 'The first half, ', after = 'and the second half.' })
  sid = other.request(methods.session_start, { cwd = H.workspace }).sessionId
  other.prompt(sid, 'Tell me in two halves')
  H.wait('the other editor to see the first half', function()
    return other.answer(sid) == 'The first half, '
  end)
  turnstoned.resume(sid, function(err, c)
    H.ok(not err, 'resumed: ' .. tostring(err))
    chat = c
  end)
  H.wait('the resumed chat', function()
    return chat ~= nil
  end)
  local text = H.text(chat.buf)
  H.ok(text:find('## You\n\nTell me in two halves\n\n## turnstoned\n\nThe first half, ', 1, true),
    'the prompt and the start of the answer, replayed:\n' .. text)
  H.ok(chat.running, 'the chat knows the turn runs')
  -- What the transcript holds as each live delta lands.
  local seen = {}
  client.on(methods.item_agent_message_delta, function(p)
    if p.sessionId == sid then
      seen[#seen + 1] = H.text(chat.buf)
    end
  end)
  model.open('half')
  H.wait_turns(chat, 1)
  H.ok(#seen > 0, 'the rest streamed in live')
  H.ok(seen[#seen]:find('The first half, and the second half.', 1, true),
    'the live rest follows the replayed start:\n' .. seen[#seen])
  text = H.text(chat.buf)
  H.eq(count(text, 'The first half, and the second half.'), 1, 'the answer, once')
  H.eq(count(text, '## You'), 1, 'one prompt')
  H.eq(count(text, '## turnstoned'), 1, 'one answer heading')
  -- The other editor reads its pipe on its own time: the end may land after the chat's.
  H.wait('the other editor to see the whole answer', function()
    return other.answer(sid) == 'The first half, and the second half.'
  end, 15000, function()
    return other.answer(sid)
  end)
end)

H.test("a prompt the other editor sends is the user's message in the chat, a queued one marked queued", function()
  model.push({ gated = 'again', before = 'Busy ', after = 'done.' }, { text = 'Read your note.' })
  local started = other.prompt(sid, 'A prompt from the other editor')
  H.wait('the prompt in the chat', function()
    return H.text(chat.buf):find('## You\n\nA prompt from the other editor', 1, true) ~= nil
  end, nil, function()
    return H.text(chat.buf)
  end)
  H.wait('its answer to start', function()
    return H.text(chat.buf):find('A prompt from the other editor\n\n## turnstoned\n\nBusy ', 1, true) ~= nil
  end)
  H.eq(session.turn(chat, started.turnId).prompt, 'A prompt from the other editor', 'the turn knows its prompt')
  local queued = other.prompt(sid, 'And a note while you work')
  H.eq(queued.queued, true, 'the second prompt waits for the running turn')
  H.wait('the queued prompt in the chat', function()
    return H.text(chat.buf):find('## You\n\nAnd a note while you work', 1, true) ~= nil
  end)
  local lnum
  for i, line in ipairs(api.nvim_buf_get_lines(chat.buf, 0, -1, false)) do
    if line == '## You' then
      lnum = i
    end
  end
  local marks = api.nvim_buf_get_extmarks(chat.buf, require('turnstoned.textbuf').status_ns,
    { lnum - 1, 0 }, { lnum - 1, -1 }, { details = true })
  local note = vim.iter(marks):map(function(m)
    return m[4].virt_text and m[4].virt_text[1][1]
  end):find(function(t)
    return t ~= nil
  end)
  H.eq(note, '  queued: the running turn reads it at its next step', 'the queued prompt says so')
  model.open('again')
  H.wait_turns(chat, 2)
  local text = H.text(chat.buf)
  H.ok(text:find('Busy done.', 1, true) and text:find('Read your note.', 1, true), 'the answers:\n' .. text)
  H.eq(count(text, '## You'), 3, 'three prompts')
end)

H.run()
