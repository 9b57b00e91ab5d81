-- Approval modes and the command sandbox against the real daemon: the mode in the winbar,
-- the statusline component and the User event, a command that runs sandboxed unasked in
-- auto mode, and a plan asked as a plan (health_spec has what :checkhealth says of the
-- sandbox: :checkhealth in a wide headless Neovim trips an assertion of its tabline).
local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/../helpers.lua')
local api = vim.api

vim.o.columns, vim.o.lines = 180, 50
local model = H.with_daemon({ '[approvals]', 'mode = "auto"' })

local turnstoned = require('turnstoned')
local session = require('turnstoned.session')
local client = require('turnstoned.client')
local methods = require('turnstoned.protocol').methods

--- The chat window's winbar, as drawn.
---@return string
local function winbar()
  local win = assert(require('turnstoned.ui').chat_win(), 'a chat window')
  return api.nvim_eval_statusline(vim.wo[win].winbar, { winid = win, use_winbar = true }).str
end

local changed = 0
api.nvim_create_autocmd('User', {
  pattern = 'TurnstonedChanged',
  callback = function()
    changed = changed + 1
  end,
})

H.test('the sandbox is there: daemon/health says so (this machine has Landlock)', function()
  local err, health = client.request_sync(methods.daemon_health, nil, 15000)
  H.eq(err, nil, 'daemon/health')
  H.ok(type(health.sandbox) == 'table' and health.sandbox.available == true,
    'a sandbox on this machine: ' .. vim.inspect(health.sandbox))
end)

H.test('an auto-mode session runs a command in the sandbox unasked; its line says sandboxed', function()
  local seen = H.stub_select(function()
    return nil
  end)
  model.push({ tool_calls = { { 'call-touch', 'bash', '{"command": "touch x"}' } } }, { text = 'Touched it.' })
  turnstoned.ask('Touch x')
  local chat = session.current()
  H.wait_turns(chat, 1)
  H.eq(#seen, 0, 'questions')
  H.eq(vim.fn.filereadable(H.workspace .. '/x'), 1, 'x exists: ' .. H.text(chat.buf))
  local text = H.text(chat.buf)
  H.ok(text:find('⚙ bash: touch x  [sandboxed]', 1, true), 'the badge on its line:\n' .. text)
  H.ok(text:find('✓ ran unasked: auto', 1, true), 'why it ran unasked:\n' .. text)
  H.eq(session.mode(chat), 'auto', "the session's mode (the daemon's default here)")
  H.ok(winbar():find('mode auto', 1, true), 'the winbar: ' .. winbar())
  H.ok(turnstoned.status():find('^turnstoned auto · '), 'the statusline component: ' .. turnstoned.status())
end)

H.test("a command asking to leave the sandbox is asked, with the model's reason", function()
  local chat = session.current()
  local seen = H.stub_select(function(_, labels)
    return H.find(labels, 'Deny')
  end)
  H.stub_input('')
  model.push({ tool_calls = { { 'call-esc', 'bash',
    '{"command": "touch outside", "escalate": true, "reason": "it needs to run outside the sandbox"}' } } },
    { text = 'Stayed inside.' })
  turnstoned.ask('Touch it outside')
  H.wait_turns(chat, 2)
  H.eq(#seen, 1, 'questions')
  H.ok(seen[1].prompt:find('[escalated]', 1, true), seen[1].prompt)
  H.ok(seen[1].prompt:find('leaves the sandbox: [^\n]*it needs to run outside the sandbox'), seen[1].prompt)
end)

H.test(':Turnstoned mode sets the mode; modeChanged redraws the winbar and fires the User event', function()
  local chat = session.current()
  local before = changed
  vim.cmd('Turnstoned mode read-only')
  H.wait('the mode to change', function()
    return chat.mode == 'read-only' and winbar():find('mode read-only', 1, true) ~= nil
  end)
  H.ok(changed > before, 'User TurnstonedChanged fired')
  H.wait('the modeChanged note', function()
    return H.text(chat.buf):find('approval mode: **read-only** (was auto)', 1, true) ~= nil
  end)
  -- The daemon takes it: a command asks now.
  local seen = H.stub_select(function(_, labels)
    return H.find(labels, 'Deny')
  end)
  H.stub_input('')
  model.push({ tool_calls = { { 'call-touch2', 'bash', '{"command": "touch y"}' } } }, { text = 'Asked.' })
  turnstoned.ask('Touch y')
  H.wait_turns(chat, 3)
  H.eq(#seen, 1, 'questions in read-only mode')
  H.ok(seen[1].prompt:find('touch y', 1, true), seen[1].prompt)
  -- Without a name, the modes are offered.
  local offered = H.stub_select(function(_, labels)
    return H.find(labels, 'full-access')
  end)
  vim.cmd('Turnstoned mode')
  H.wait('full-access', function()
    return chat.mode == 'full-access'
  end)
  H.eq(#offered[1].labels, 4, 'the modes offered')
  H.eq(turnstoned.complete('', 'Turnstoned mode '), { 'read-only', 'auto', 'full-access', 'plan' }, 'completion')
  H.eq(turnstoned.complete('re', 'Turnstoned re'), { 'redo', 'rerun', 'restart' }, 'completion of subcommands')
end)

H.test('a new session starts in the configured mode; a plan is asked as a plan and approving it moves to auto', function()
  local config = vim.g.turnstoned
  config.mode = 'plan'
  vim.g.turnstoned = config
  turnstoned.new_session()
  local chat = session.current()
  local shown
  local seen = H.stub_select(function(_, labels)
    for _, win in ipairs(api.nvim_list_wins()) do
      local buf = api.nvim_win_get_buf(win)
      if api.nvim_buf_get_name(buf):find('turnstoned://approval/', 1, true) then
        shown = H.text(buf)
      end
    end
    return H.find(labels, 'Approve the plan')
  end)
  model.push({ tool_calls = { { 'call-plan', 'propose_plan', vim.json.encode({ plan = '# Tidy up\n1. Remove x\n2. Say so' }) } } },
    { text = 'Carrying it out.' })
  turnstoned.ask('Make a plan')
  H.wait_turns(chat, 1)
  H.eq(#seen, 1, 'questions')
  H.ok(seen[1].prompt:find('^Approve this plan%? 📋 plan: Tidy up'), seen[1].prompt)
  H.ok(shown and shown:find('    # Tidy up\n    1. Remove x\n    2. Say so', 1, true), 'the plan beside the question: '
    .. tostring(shown))
  H.wait('the switch to auto', function()
    return chat.mode == 'auto'
  end)
  H.ok(H.text(chat.buf):find('approval mode: **auto** (was plan)', 1, true), H.text(chat.buf))
  config.mode = nil
  vim.g.turnstoned = config
  vim.fn.writefile(H.screen(assert(require('turnstoned.ui').chat_win())), H.artifacts .. '/modes-screen.txt')
end)

H.run()
