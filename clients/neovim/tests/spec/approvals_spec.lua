-- Approvals that think, against the real daemon: verdicts and the judge's in the question,
-- "Always" that names its rules, editing a call, grants, and a workspace's tool policies.
local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/../helpers.lua')
local api = vim.api

vim.o.columns, vim.o.lines = 180, 60
local judge = H.model() -- the LLM judge: a model of its own, so its answers are scripted apart
local model = H.with_daemon({
  '[judge]', 'enabled = true', 'model = "judge"', '',
  '[models.judge]', ('base_url = "%s"'):format(judge.base_url), 'name = "scripted"',
})
local stop = H.cleanup
H.cleanup = function()
  stop()
  judge.stop()
end

local turnstoned = require('turnstoned')
local session = require('turnstoned.session')
local turns = 0

--- The approval's details window, if one is open.
---@return string?
local function details()
  for _, win in ipairs(api.nvim_list_wins()) do
    local buf = api.nvim_win_get_buf(win)
    if api.nvim_buf_get_name(buf):find('turnstoned://approval/', 1, true) then
      return H.text(buf)
    end
  end
end

---@param labels string[]
---@param prefix string
---@return boolean
local function offers(labels, prefix)
  return vim.iter(labels):any(function(l)
    return vim.startswith(l, prefix)
  end)
end

local function next_turn()
  turns = turns + 1
  H.wait_turns(session.current(), turns)
end

H.test("a risky call is asked with its verdict; the judge's verdict joins the open question", function()
  local open
  vim.ui.select = function(items, opts, on_choice)
    open = { items = items, prompt = opts.prompt, labels = vim.tbl_map(opts.format_item, items), answer = on_choice }
  end
  judge.push({ text = '{"risk": "high", "recommendation": "review", "confidence": 0.9, '
    .. '"reason": "it deletes the build directory"}' })
  model.push({ tool_calls = { { 'call-rm', 'bash', '{"command": "rm -rf build"}' } } },
    { text = 'I left the build directory alone.' })
  H.stub_input('')
  turnstoned.ask('Clean the build')
  H.wait('the question', function()
    return open ~= nil
  end)
  H.ok(open.prompt:find('⚙ bash: rm -rf build  [unsandboxed]  [high: recursive-delete]', 1, true), open.prompt)
  H.ok(not offers(open.labels, 'Always'), 'no Always: it would save nothing: ' .. vim.inspect(open.labels))
  local shown = assert(details(), 'a details window')
  H.ok(shown:find('risk:   high · review: ', 1, true), shown)
  H.ok(shown:find('(rule recursive-delete)', 1, true), shown)
  H.ok(shown:find('always: saves nothing (this call asks every time)', 1, true), shown)
  H.wait("the judge's verdict in the open question", function()
    return (details() or ''):find('judge:  high · review (90% sure): it deletes the build directory', 1, true)
  end)
  local deny = H.find(open.labels, 'Deny')
  open.answer(open.items[deny], deny)
  next_turn()
  H.eq(details(), nil, 'the details window closed with the question')
  local text = H.text(session.current().buf)
  H.ok(text:find('⚖ high · review: [^\n]*%(rule recursive%-delete%)'), 'the card has the verdict:\n' .. text)
  H.ok(text:find('⚖ judge: high · review (90% sure): it deletes the build directory', 1, true),
    "the card has the judge's verdict:\n" .. text)
end)

H.test('an edited command runs instead of the one the model asked for, and the chat shows it', function()
  vim.fn.mkdir(H.workspace .. '/build', 'p')
  vim.fn.writefile({ 'keep me' }, H.workspace .. '/build/out.txt')
  local seen = H.stub_select(function(_, labels)
    return H.find(labels, 'Edit the command')
  end)
  H.stub_input('echo edited-instead')
  model.push({ tool_calls = { { 'call-rm2', 'bash', '{"command": "rm -rf build"}' } } },
    { text = 'Ran your command.' })
  turnstoned.ask('Clean the build again')
  next_turn()
  H.eq(#seen, 1, 'questions')
  H.eq(vim.fn.readfile(H.workspace .. '/build/out.txt'), { 'keep me' }, 'the build directory')
  local text = H.text(session.current().buf)
  H.ok(text:find('⚙ bash: echo edited-instead', 1, true), 'what ran:\n' .. text)
  H.ok(text:find('✎ edited by you; the model asked for: rm -rf build', 1, true), 'what was asked:\n' .. text)
  H.ok(text:find('\nedited-instead\n', 1, true), 'its output:\n' .. text)
end)

H.test('Always names the rule it saves; the grant is listed, runs unasked, and revoked asks again', function()
  local seen = H.stub_select(function(_, labels)
    return H.find(labels, 'Always')
  end)
  model.push({ tool_calls = { { 'call-t1', 'bash', '{"command": "touch first.txt"}' } } }, { text = 'Made it.' })
  turnstoned.ask('Make a file')
  next_turn()
  H.ok(vim.tbl_contains(seen[1].labels, 'Always (allow bash:touch for this session)'), vim.inspect(seen[1].labels))
  -- The grant covers the next touch: no question.
  model.push({ tool_calls = { { 'call-t2', 'bash', '{"command": "touch second.txt"}' } } }, { text = 'Again.' })
  turnstoned.ask('Another one')
  next_turn()
  H.eq(#seen, 1, 'questions after the grant')
  H.ok(H.text(session.current().buf):find('✓ ran unasked: grant: bash:touch', 1, true), H.text(session.current().buf))
  -- :TurnstonedGrants lists it; revoking it makes touch ask again.
  local pickers = H.stub_select(function(_, labels)
    return labels[1]:find('^Revoke') and 1 or H.find(labels, 'bash:touch')
  end)
  local note = H.notified_by('TurnstonedGrants', 'the revocation')
  H.ok(pickers[1].labels[1]:find('^bash:touch%s+.*%[this session%]'), vim.inspect(pickers[1].labels))
  H.eq(note, 'turnstoned: revoked bash:touch: its calls ask again', 'the note')
  local asked = H.stub_select(function(_, labels)
    return H.find(labels, 'Approve')
  end)
  model.push({ tool_calls = { { 'call-t3', 'bash', '{"command": "touch third.txt"}' } } }, { text = 'Asked.' })
  turnstoned.ask('A third one')
  next_turn()
  H.eq(#asked, 1, 'the revoked grant asks again')
end)

H.test("a workspace's policies file is asked about in turn; :TurnstonedPolicies lists and revokes it", function()
  local dir = H.workspace .. '/policied'
  vim.fn.mkdir(dir .. '/.turnstone', 'p')
  vim.fn.writefile({
    '[[policies]]', 'label = "bash"', 'command = "echo *"', 'action = "allow"', 'reason = "echo is harmless"',
    '', '[[policies]]', 'label = "bash"', 'command = "rm *"', 'action = "deny"', 'reason = "no deleting here"',
  }, dir .. '/.turnstone/policies.toml')
  local config = vim.g.turnstoned
  config.cwd = dir
  vim.g.turnstoned = config
  local previews = {}
  local seen = H.stub_select(function(_, labels)
    previews[#previews + 1] = H.text(api.nvim_win_get_buf(api.nvim_tabpage_list_wins(0)[1]))
    return H.find(labels, 'Trust this file')
  end)
  turnstoned.new_session()
  model.push({ text = 'Hello there.' })
  turnstoned.ask('Hello')
  H.wait_turns(session.current(), 1)
  H.wait('the trust question', function()
    return #seen == 1
  end)
  H.ok(seen[1].prompt:find('policies.toml', 1, true), seen[1].prompt)
  H.ok(previews[1]:find('allow bash · command echo * — echo is harmless', 1, true), previews[1])
  H.ok(previews[1]:find('deny  bash · command rm * — no deleting here', 1, true), previews[1])
  local listed
  H.stub_select(function(_, labels)
    listed = listed or labels
    return H.find(labels, 'Revoke trust')
  end)
  H.wait('the trust to be recorded', function()
    local _, result = require('turnstoned.client').request_sync(require('turnstoned.protocol').methods.policy_list,
      { sessionId = session.current().sid })
    return result and result.workspaceFile and result.workspaceFile.decision == 'trusted'
  end)
  local note = H.notified_by('TurnstonedPolicies', 'the revocation')
  H.ok(listed[1]:find('^deny  bash · command rm %*'), 'deny is tried first: ' .. vim.inspect(listed))
  H.ok(vim.iter(listed):any(function(l)
    return l:find('^allow bash · command echo %*') ~= nil
  end), vim.inspect(listed))
  H.ok(note:find('^turnstoned: revoked .*policies.toml'), note)
  local _, after = require('turnstoned.client').request_sync(require('turnstoned.protocol').methods.policy_list,
    { sessionId = session.current().sid })
  local allow = vim.iter(after.policies):find(function(pol)
    return pol.action == 'allow'
  end)
  H.eq(allow.active, false, 'the allow rule after the revocation')
end)

H.run()
