-- An MCP server's questions (mcpServer/elicit), against the real daemon and the repository's
-- asking server: its `book` tool asks who the booking is for (name, seats = 2, window = false).
local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/../helpers.lua')
local api = vim.api

local model = H.with_daemon({
  '[mcp.servers.asking]',
  ('command = "%s"'):format(H.python),
  ('args = ["%s"]'):format(H.repo .. '/tests/mcp_servers/asking.py'),
  -- search off: the model is offered the server's tools itself, not behind tool_search
  '', '[tools]', 'auto_approve_tools = ["mcp__asking__book"]', 'search = "off"',
})
local turnstoned = require('turnstoned')
local session = require('turnstoned.session')
local elicit = require('turnstoned.elicit')
local turns = 0

local function next_turn()
  turns = turns + 1
  H.wait_turns(session.current(), turns, 30000)
end

--- What the model read as the result of call `id` (in the last request it got).
---@param id string
---@return string?
local function tool_result(id)
  local messages = model.request(model.requests()).messages
  for _, m in ipairs(messages) do
    if m.role == 'tool' and m.tool_call_id == id then
      return type(m.content) == 'string' and m.content or vim.inspect(m.content)
    end
  end
end

--- Stub vim.ui.input: `answer(prompt, default)` gives the text (nil dismisses).
---@param answer fun(prompt: string, default: string): string?
---@return {prompt: string, default: string}[] seen
local function stub_input(answer)
  local seen = {}
  vim.ui.input = function(opts, on_confirm)
    seen[#seen + 1] = { prompt = opts.prompt, default = opts.default }
    local text = answer(opts.prompt, opts.default or '')
    vim.schedule(function()
      on_confirm(text)
    end)
  end
  return seen
end

--- The MCP server's tools are listed once it has started.
local function wait_for_server()
  H.wait('the asking server to start', function()
    local _, list = require('turnstoned.client').request_sync(require('turnstoned.protocol').methods.mcp_server_list)
    return list and vim.iter(list.servers or {}):any(function(s)
      return s.name == 'asking' and s.status == 'connected'
    end)
  end, 30000)
end

H.test('the form, parsed: required fields first, kinds, defaults, enums', function()
  local fields = elicit.fields({
    type = 'object',
    properties = {
      zeta = { type = 'boolean' },
      size = { type = 'string', enum = { 's', 'm' }, enumNames = { 'Small', 'Medium' }, default = 'm' },
      count = { type = 'integer', minimum = 1, default = 2 },
      name = { type = 'string', title = 'Name' },
    },
    required = { 'name' },
  })
  H.eq(vim.tbl_map(function(f)
    return f.name
  end, fields), { 'name', 'count', 'size', 'zeta' }, 'order')
  H.eq({ fields[1].label, fields[1].required, fields[2].kind, fields[3].kind, fields[4].kind },
    { 'Name', true, 'integer', 'enum', 'boolean' }, 'fields')
  H.eq(fields[3].choices[2], { value = 'm', label = 'Medium' }, 'an enum choice')
  H.eq(elicit.number(fields[2], 'x'), '"x" is not a number', 'a bad number')
  H.eq(elicit.number(fields[2], '1.5'), '"1.5" is not a whole number', 'not an integer')
  H.eq(elicit.number(fields[2], '0'), '0 is less than 1', 'under the minimum')
  H.eq({ elicit.number(fields[2], ' 3 ') }, { nil, 3 }, 'a good one')
end)

H.test('answering: asked field by field, a bad number asked again, the tool gets the answer', function()
  wait_for_server()
  local selects = H.stub_select(function(_, labels, opts)
    if opts.prompt:find('asks:', 1, true) then
      return H.find(labels, 'Answer')
    end
    return 1 -- the default comes first
  end)
  local bad = false
  local inputs = stub_input(function(prompt, default)
    if prompt:find('^Name') then
      return 'Ada'
    end
    if prompt:find('^Seats') and not bad then
      bad = true
      return 'two' -- not a number: asked again
    end
    return default
  end)
  local warnings = H.record_notify()
  model.push({ tool_calls = { { 'call-book', 'mcp__asking__book', '{}' } } }, { text = 'Booked.' })
  turnstoned.ask('Book a table')
  next_turn()
  H.eq(selects[1].prompt, 'asking asks: Who is the booking for?', 'the first prompt')
  H.eq(selects[1].labels, { 'Answer', 'Decline', 'Cancel' }, 'its choices')
  H.eq(vim.tbl_map(function(i)
    return { i.prompt:match('^(%w+)'), i.default }
  end, inputs), { { 'Name', '' }, { 'Seats', '2' }, { 'Seats', '2' } }, 'the text prompts')
  H.ok(inputs[1].prompt:find('[required]', 1, true), inputs[1].prompt)
  H.eq(selects[2].labels, { 'no (default)', 'yes' }, 'the boolean, its default first')
  H.ok(vim.iter(warnings):any(function(w)
    return w:find('"two" is not a number', 1, true) ~= nil
  end), vim.inspect(warnings))
  H.eq(tool_result('call-book'), 'booked Ada x2 window=False', 'the tool result')
  H.ok(H.text(session.current().buf):find('❓ asking asked: Who is the booking for? — answered', 1, true),
    H.text(session.current().buf))
end)

H.test('Decline declines; dismissing a field cancels', function()
  H.stub_select(function(_, labels)
    return H.find(labels, 'Decline')
  end)
  model.push({ tool_calls = { { 'call-no', 'mcp__asking__book', '{}' } } }, { text = 'Not booked.' })
  turnstoned.ask('Book another')
  next_turn()
  H.eq(tool_result('call-no'), 'no booking: decline', 'the tool result')
  H.ok(H.text(session.current().buf):find('Who is the booking for? — declined', 1, true), H.text(session.current().buf))

  H.stub_select(function(_, labels)
    return H.find(labels, 'Answer')
  end)
  stub_input(function()
    return nil -- the user pressed <Esc>
  end)
  model.push({ tool_calls = { { 'call-esc', 'mcp__asking__book', '{}' } } }, { text = 'Cancelled.' })
  turnstoned.ask('And another')
  next_turn()
  -- (the daemon adds that the call repeats an earlier one, word for word)
  local result = tool_result('call-esc') or ''
  H.ok(vim.startswith(result, 'no booking: cancel'), 'the tool result: ' .. result)
end)

H.test('a question withdrawn by an interrupt closes its open prompt', function()
  local chat = session.current()
  local picker
  H.stub_select(function()
    picker = api.nvim_open_win(api.nvim_create_buf(false, true), true,
      { relative = 'editor', row = 1, col = 1, width = 40, height = 3 })
    return false -- the user has not answered yet
  end)
  model.push({ tool_calls = { { 'call-wait', 'mcp__asking__book', '{}' } } })
  turnstoned.ask('Book, but I will change my mind')
  H.wait('the question', function()
    return picker ~= nil
  end, 30000)
  turnstoned.interrupt()
  next_turn()
  H.wait('the picker to close', function()
    return not api.nvim_win_is_valid(picker)
  end)
  H.eq(require('turnstoned.questions').pending(), 0, 'pending prompts')
  H.ok(H.text(chat.buf):find('Who is the booking for? — withdrawn', 1, true), H.text(chat.buf))
end)

H.run()
