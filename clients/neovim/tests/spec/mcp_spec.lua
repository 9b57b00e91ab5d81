-- A project's .mcp.json: the daemon asks before its servers start; :TurnstonedMcp trusts
-- and revokes on demand.
local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/../helpers.lua')
local api = vim.api

local model = H.with_daemon()
local turnstoned = require('turnstoned')
local session = require('turnstoned.session')
local client = require('turnstoned.client')
local methods = require('turnstoned.protocol').methods

local config_path = H.workspace .. '/.mcp.json'
vim.fn.writefile({ vim.json.encode({ mcpServers = { everything = {
  command = H.python, args = { H.repo .. '/tests/mcp_servers/everything.py' },
  env = { TOKEN = '${HOME}' },
} } }) }, config_path)

local state = {}
client.on(methods.mcp_server_status_changed, function(p)
  state[p.name] = p.status
end)

--- Wait for the pickers to answer, recording what each showed.
---@param answers string[] label prefixes, one per question
---@return table[] seen
local function answer(answers)
  local previews = {}
  local seen = H.stub_select(function(_, labels)
    -- The preview window is open while the question is asked.
    local top = api.nvim_tabpage_list_wins(0)[1]
    previews[#previews + 1] = H.text(api.nvim_win_get_buf(top))
    return H.find(labels, table.remove(answers, 1))
  end)
  return seen, previews
end

H.test('opening a session in the project asks, showing what would run; Not now starts nothing', function()
  local seen, previews = answer({ 'Not now' })
  model.push({ text = 'Hi.' })
  turnstoned.ask('Hello')
  H.wait_turns(session.current(), 1)
  H.wait('the trust question', function()
    return #seen == 1
  end)
  H.ok(seen[1].prompt:find('.mcp.json', 1, true), seen[1].prompt)
  H.ok(previews[1]:find('everything (stdio)', 1, true), 'the server:\n' .. previews[1])
  H.ok(previews[1]:find('runs:  ' .. H.python, 1, true), 'the command:\n' .. previews[1])
  H.ok(previews[1]:find('sets:  TOKEN', 1, true), 'the env it sets:\n' .. previews[1])
  H.ok(previews[1]:find('reads your environment variables: HOME', 1, true), 'the variables:\n' .. previews[1])
  H.eq(#api.nvim_tabpage_list_wins(0), 3, 'the preview closed (code, chat, prompt)')
  local _, list = client.request_sync(methods.mcp_server_list)
  H.eq(list.servers[1].status, 'untrusted', 'the server')
end)

H.test('a trust question and an approval arriving together are asked one at a time', function()
  local showing, overlaps, prompts = false, 0, {}
  vim.ui.select = function(items, opts, on_choice)
    overlaps = overlaps + (showing and 1 or 0)
    showing = true
    prompts[#prompts + 1] = opts.prompt
    local labels = vim.tbl_map(opts.format_item, items)
    local pick = H.find(labels, labels[1]:find('^Trust') and 'Not now' or 'Approve')
    -- The user takes a moment: a second picker opened meanwhile would overlap this one.
    vim.defer_fn(function()
      showing = false
      on_choice(items[pick], pick)
    end, 100)
  end
  turnstoned.new_session()
  model.push({ tool_calls = { { 'call-t', 'bash', '{"command": "touch together.txt; echo together"}' } } }, { text = 'Done.' })
  turnstoned.ask('Run it')
  H.wait_turns(session.current(), 1)
  H.wait('both questions', function()
    return #prompts == 2
  end)
  H.eq(overlaps, 0, 'questions open at the same time')
  H.ok(H.text(session.current().buf):find('together', 1, true), 'the call ran')
end)

H.test(':TurnstonedMcp shows the file, trusts it, and the server starts', function()
  local seen, previews = answer({ 'everything', "Trust this project's", 'Trust this file as shown' })
  local note = H.notified_by('TurnstonedMcp', 'the trust to be reported')
  H.ok(seen[1].labels[1]:find('untrusted', 1, true), 'the list says untrusted: ' .. seen[1].labels[1])
  H.ok(previews[3]:find('"mcpServers"', 1, true), 'the file as it is on disk:\n' .. previews[3])
  H.ok(note:find('trusted .*everything connected'), note)
  H.eq(state.everything, 'connected', 'the status notification')
end)

H.test(':TurnstonedMcp revokes the trust and the server stops', function()
  answer({ 'everything', 'Revoke' })
  local note = H.notified_by('TurnstonedMcp', 'the revocation to be reported')
  H.ok(note:find('revoked', 1, true), note)
  H.wait('the server to be untrusted', function()
    return state.everything == 'untrusted'
  end)
end)

H.test(':checkhealth says the project server is untrusted and how to trust it', function()
  vim.cmd('checkhealth turnstoned')
  local report = H.text(0)
  H.ok(report:find('WARNING MCP everything%s+untrusted'), report)
  H.ok(report:find(':TurnstonedMcp shows it and trusts it', 1, true), report)
end)

H.run()
