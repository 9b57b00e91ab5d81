-- Choosing a model against the real daemon: :Turnstoned model switches the session and is
-- remembered for the workspace's new sessions; a first run offers what a local server
-- serves, and model/use saves it.
local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/../helpers.lua')
local api = vim.api

-- Headless Neovim 0.11 aborts drawing :checkhealth's tab after 'columns' was set: the
-- default size, and a wide chat window for the winbar.
local model, home = H.with_daemon()
vim.g.turnstoned = vim.tbl_extend('force', vim.g.turnstoned, { width = 0.9 })

local turnstoned = require('turnstoned')
local session = require('turnstoned.session')

--- What the chat window's winbar says.
---@return string
local function winbar()
  return H.screen(assert(require('turnstoned.ui').chat_win()))[1]
end

local stub_notify = H.record_notify

H.test(':Turnstoned model other: the next request names it, the winbar shows it, new sessions here start with it', function()
  model.push({ text = 'one' }, { text = 'two' }, { text = 'three' })
  turnstoned.ask('first')
  local chat = session.current()
  H.wait_turns(chat, 1)
  H.eq(model.request(-1).model, 'scripted', 'the daemon\'s model first')
  H.wait('the default model in the winbar', function()
    return winbar():find('scripted', 1, true) ~= nil
  end, nil, winbar)
  local notes = stub_notify()
  vim.cmd('Turnstoned model other')
  H.wait('the switch', function()
    return #notes > 0
  end)
  H.ok(notes[1]:find('model other for this chat and new sessions in', 1, true), notes[1])
  H.ok(winbar():find('mode read-only · other · ', 1, true), winbar())
  H.ok(turnstoned.status():find('^turnstoned read%-only · other · idle'), turnstoned.status())
  H.ok(H.text(chat.buf):find('> ⚙ model: **other** (was scripted)', 1, true), H.text(chat.buf))
  turnstoned.ask('second')
  H.wait_turns(chat, 2)
  H.eq(model.request(-1).model, 'other', 'the session\'s own model')
  local file = vim.fn.readfile(require('turnstoned.store').path())
  H.eq(vim.json.decode(file[1])[session.cwd()], { model = 'other' }, 'remembered for the workspace')
  turnstoned.new_session()
  turnstoned.ask('third')
  local fresh = session.current()
  H.wait_turns(fresh, 1)
  H.eq(model.request(-1).model, 'other', 'a new session in the workspace starts with it')
  H.eq(fresh.model, 'other', 'and says so')
end)

H.test(':Turnstoned model picks among what model/list gives', function()
  local seen = H.stub_select(function(_, labels)
    return H.find(labels, 'scripted')
  end)
  local notes = stub_notify()
  vim.cmd('Turnstoned model')
  H.wait('the switch', function()
    return #notes > 0
  end)
  H.eq(seen[1].prompt, 'turnstoned model (now other)', 'the prompt')
  H.eq(seen[1].labels, { 'scripted  (the default, 32.8k context)' }, 'the choices')
  H.eq(session.current().model, 'scripted', 'switched back')
end)

--- Restart the daemon with no model configured anywhere.
--- No model configured; the daemon looks for local servers only where `local_servers`
--- says (TURNSTONED_LOCAL_SERVERS, `Name=port,...`; '' looks nowhere), so what this
--- machine runs on the usual ports cannot change what a spec sees.
---@param local_servers? string
local function unconfigure(local_servers)
  turnstoned.stop()
  local config = vim.g.turnstoned
  config.env = { TURNSTONED_HOME = home, OPENAI_API_KEY = 'sk-test',
    TURNSTONED_LOCAL_SERVERS = local_servers or '' }
  vim.g.turnstoned = config
  require('turnstoned.store').set(session.cwd(), 'model', nil)
  turnstoned.new_session()
end

--- A port nothing listens on (the kernel picks it).
---@return integer
local function free_port()
  local tcp = assert(vim.uv.new_tcp())
  assert(tcp:bind('127.0.0.1', 0))
  local port = tcp:getsockname().port
  tcp:close()
  return port
end

H.test('with no model configured and no local server: one message says how to configure', function()
  unconfigure('') -- the daemon looks nowhere: nothing is found
  local notes = stub_notify()
  model.push({ text = 'unused' })
  local before = model.requests()
  turnstoned.ask('hello')
  local chat = session.current()
  H.wait('the advice', function()
    return #notes > 0
  end)
  H.ok(H.text(chat.buf):find('turn failed** (notConfigured)', 1, true), H.text(chat.buf))
  H.eq(#notes, 1, 'one message')
  H.ok(notes[1]:find(':checkhealth turnstoned', 1, true) and notes[1]:find(':help turnstoned-models', 1, true), notes[1])
  H.eq(model.requests(), before, 'no model was asked')
end)

H.test('a first run offers the model a local server serves; model/use saves it and the next prompt uses it', function()
  -- A second scripted model where the daemon looks for Ollama, found by its own probe.
  local port = free_port()
  unconfigure('Ollama=' .. port)
  local ollama = H.model(port)
  local base = ('http://127.0.0.1:%d/v1'):format(port)
  vim.cmd('checkhealth turnstoned') -- :checkhealth names what the probe found
  local report = H.text(api.nvim_get_current_buf())
  vim.cmd.bwipeout()
  H.ok(report:find('WARNING no model is configured; local servers serve: scripted on Ollama (' .. base .. ')', 1, true),
    report)
  local seen = H.stub_select(function(_, labels)
    return vim.startswith(labels[1], 'Use it') and 1 or H.find(labels, 'scripted on Ollama')
  end)
  local notes = stub_notify()
  ollama.push({ text = 'Hello from the local server.' })
  turnstoned.ask('hello again')
  H.wait('the model to be used', function()
    return vim.iter(notes):any(function(n)
      return n:find('is the model now', 1, true) ~= nil
    end)
  end, 20000)
  H.ok(seen[1].prompt == 'Use scripted on Ollama?' or seen[1].prompt:find('No model is configured', 1, true),
    'the offer: ' .. vim.inspect(seen[1]))
  local saved = table.concat(vim.fn.readfile(home .. '/config/config.toml'), '\n')
  H.ok(saved:find('[model]', 1, true) and saved:find('\nname = "scripted"', 1, true)
    and saved:find('\nbase_url = "' .. base .. '"', 1, true), 'config.toml:\n' .. saved)
  H.ok(saved:find('mode = "read-only"', 1, true), 'the rest of the file kept:\n' .. saved)
  local before = ollama.requests()
  local chat = session.current()
  turnstoned.ask('and now?')
  H.wait('the answer', function()
    return H.text(chat.buf):find('Hello from the local server.', 1, true) ~= nil
  end)
  H.eq(ollama.requests(), before + 1, 'the local server answered')
  ollama.stop()
end)

H.run()
