-- Logging in to HTTP MCP servers (protocol 1.14), against the real daemon and the repository's
-- OAuth-protected MCP server (tests/mcp_servers/oauth_server.py: `o`, one tool, its own
-- authorization server that approves at once), plus `gone`, a URL nothing listens on.
--
-- The browser is the one stand-in: vim.ui.open is stubbed to record the page and fetch it as
-- a browser would once the user said yes (its redirect reaches the daemon's loopback
-- receiver), or to fail as on a machine without one, where the "user" fetches the address
-- the notification shows.
local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/../helpers.lua')

-- What the client hears and answers, through the handlers the plugin registers: recorded
-- before anything wires the plugin.
local client = require('turnstoned.client')
local methods = require('turnstoned.protocol').methods
local codes = require('turnstoned.protocol').error_codes
local listeners, handlers, answered, sent = {}, {}, {}, {}
local on, on_request, request = client.on, client.on_request, client.request
client.on = function(method, fn)
  listeners[method] = listeners[method] or {}
  table.insert(listeners[method], fn)
  on(method, fn)
end
client.on_request = function(method, handler)
  handlers[method] = function(params, respond, req)
    handler(params, function(result, err)
      answered[#answered + 1] = { method = method, params = params, result = result, err = err }
      respond(result, err)
    end, req)
  end
  on_request(method, handlers[method])
end
client.request = function(method, params, cb)
  local entry = { method = method, params = params }
  sent[#sent + 1] = entry
  return request(method, params, function(err, result)
    entry.err, entry.answered = err, true
    if cb then
      cb(err, result)
    end
  end)
end

--- Feed a notification to what the plugin registered for it, as the client does.
---@param method string
---@param params table
local function feed(method, params)
  for _, fn in ipairs(listeners[method] or {}) do
    fn(params)
  end
end

-- The OAuth-protected server, on a port it picks.
local lines = {}
local oauth = vim.system({ H.python, H.repo .. '/tests/mcp_servers/oauth_server.py' }, {
  stdout = function(_, data)
    for line in (data or ''):gmatch('[^\n]+') do
      lines[#lines + 1] = line
    end
  end,
})
H.wait('the OAuth server to start', function()
  return lines[1] ~= nil
end, 30000)
local port = assert(lines[1]:match('^PORT (%d+)'), lines[1])
-- A port nothing listens on: taken from the system, then let go.
local probe = assert(vim.uv.new_tcp())
probe:bind('127.0.0.1', 0)
local closed_port = probe:getsockname().port
probe:close()

local model = H.with_daemon({
  '[mcp.servers.o]', ('url = "http://127.0.0.1:%s/mcp"'):format(port),
  '[mcp.servers.gone]', ('url = "http://127.0.0.1:%d/mcp"'):format(closed_port),
  '[tools]', 'search = "off"',
})
local stop_daemon = H.cleanup
H.cleanup = function()
  stop_daemon()
  oauth:kill(15)
end

local turnstoned = require('turnstoned')
local mcp = require('turnstoned.mcp')
local session = require('turnstoned.session')

--- Record vim.notify: the texts and their levels.
---@return {msg: string, level: integer}[]
local function stub_notify()
  local notes = {}
  vim.notify = function(msg, level)
    notes[#notes + 1] = { msg = msg, level = level or vim.log.levels.INFO }
  end
  return notes
end

---@param notes {msg: string}[]
---@param pattern string a plain substring
---@return {msg: string, level: integer}[]
local function matching(notes, pattern)
  return vim.tbl_filter(function(n)
    return n.msg:find(pattern, 1, true) ~= nil
  end, notes)
end

--- Open `url` as a browser does (following the redirect to the daemon), in the background.
---@param url string
local function browse(url)
  vim.system({ H.python, '-c', 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=30).read()', url })
end

--- Stub vim.ui.open: `how` 'browse' opens the page, 'fail' reports no opener (nil, err),
--- 'ignore' starts "a browser" the user never finishes in. Returns the URLs it was given.
---@param how 'browse'|'fail'|'ignore'
---@return string[]
local function stub_open(how)
  local urls = {}
  vim.ui.open = function(url)
    urls[#urls + 1] = url
    if how == 'fail' then
      return nil, 'vim.ui.open: no handler found'
    end
    if how == 'browse' then
      browse(url)
    end
    return { wait = function() end }, nil
  end
  return urls
end

--- The daemon's current state of server `name`.
---@param name string
---@return turnstoned.McpServerInfo
local function state(name)
  local _, list = client.request_sync(methods.mcp_server_list)
  return vim.iter(list.servers):find(function(s)
    return s.name == name
  end)
end

local function answers_to(method)
  return vim.tbl_filter(function(a)
    return a.method == method
  end, answered)
end

local function requests_of(method)
  return vim.tbl_filter(function(r)
    return r.method == method
  end, sent)
end

H.test('the labels say needs login / logged in; login offers those needing one first', function()
  local needs = { name = 'o', status = 'failed', tools = 0, needsAuth = true, loggedIn = false,
    error = 'needs login', origin = 'config' }
  H.ok(mcp.label(needs):find('^o%s+failed%s+0 tools  needs login  %[config%]  needs login$'), mcp.label(needs))
  H.ok(mcp.label({ name = 'o', status = 'connected', tools = 1, loggedIn = true }):find('1 tools  logged in$'),
    'logged in')
  H.ok(not mcp.label({ name = 'e', status = 'connected', tools = 3 }):find('log'), 'neither')
  local servers = {
    { name = 'a', status = 'connected', loggedIn = true },
    { name = 'b', status = 'failed', needsAuth = true },
    { name = 'c', status = 'untrusted' },
    { name = 'd', status = 'disabled' },
    { name = 'e', status = 'failed' },
  }
  H.eq(vim.tbl_map(function(s)
    return s.name
  end, mcp.candidates(servers, 'login')), { 'b', 'a', 'e' }, 'login candidates')
  H.eq(vim.tbl_map(function(s)
    return s.name
  end, mcp.candidates(servers, 'logout')), { 'a' }, 'logout candidates')
  H.eq(turnstoned.complete('', 'Turnstoned mcp '), { 'login', 'logout' }, 'completion after mcp')
  H.eq(turnstoned.complete('m', 'Turnstoned m'), { 'mcp', 'mode', 'model' }, 'mcp is a subcommand')
end)

H.test('a server that asks for a login is told once, with the command; nothing opens unasked', function()
  local notes = stub_notify()
  local urls = stub_open('browse')
  turnstoned.open({ focus = false }) -- wires the plugin; the daemon starts below
  client.start()
  H.wait('the needs-login notification', function()
    return #matching(notes, 'needs you to log in') > 0
  end, 30000, function()
    return vim.inspect(notes)
  end)
  H.eq(matching(notes, 'needs you to log in')[1],
    { msg = 'turnstoned: MCP server o needs you to log in: :Turnstoned mcp login o', level = vim.log.levels.WARN },
    'the notification')
  H.wait('gone to fail', function()
    return state('gone').status == 'failed'
  end, 30000)
  H.eq(#matching(notes, 'needs you to log in'), 1, 'one notification (gone needs no login)')
  H.eq(urls, {}, 'no page opened before the user asked')
  H.eq(turnstoned.complete('', 'Turnstoned mcp login '), { 'o', 'gone' }, 'login completes o first')
  H.eq(turnstoned.complete('', 'Turnstoned mcp logout '), {}, 'nothing is logged in')
end)

H.test('statusChanged through the registered handler: one notification per turn to needs login', function()
  local notes = stub_notify()
  local sc = methods.mcp_server_status_changed
  feed(sc, { name = 'fed', status = 'connected', tools = 2, needsAuth = false, loggedIn = true })
  feed(sc, { name = 'fed', status = 'failed', tools = 0, needsAuth = true, loggedIn = true, error = 'asks for a login' })
  feed(sc, { name = 'fed', status = 'failed', tools = 0, needsAuth = true, loggedIn = true, error = 'still' })
  H.eq(#matching(notes, 'MCP server fed needs you to log in: :Turnstoned mcp login fed'), 1, 'told once')
  H.ok(mcp.label(mcp.server('fed')):find('needs login', 1, true), mcp.label(mcp.server('fed')))
  feed(sc, { name = 'fed', status = 'connected', tools = 2, needsAuth = false, loggedIn = true })
  H.ok(mcp.label(mcp.server('fed')):find('logged in', 1, true), mcp.label(mcp.server('fed')))
  feed(sc, { name = 'fed', status = 'failed', tools = 0, needsAuth = true, loggedIn = false })
  H.eq(#matching(notes, 'MCP server fed needs you to log in'), 2, 'a new turn is told again')
end)

H.test(':TurnstonedMcp shows o needing a login and offers to log in', function()
  local asked = 0
  local seen = H.stub_select(function(_, labels)
    asked = asked + 1
    if asked == 1 then
      return H.find(labels, 'o ')
    end
    return nil -- dismiss the actions
  end)
  vim.cmd('TurnstonedMcp')
  H.wait('the actions of o', function()
    return #seen == 2
  end)
  H.ok(seen[1].labels[H.find(seen[1].labels, 'o ')]:find('failed%s+0 tools  needs login'), vim.inspect(seen[1].labels))
  H.eq(seen[2].labels[1], 'Log in (opens the login page in your browser)', 'the first action')
end)

H.test('a login that cannot connect shows the daemon\'s reason (mcpLoginFailed), unknown names too', function()
  local notes = stub_notify()
  local urls = stub_open('browse')
  vim.cmd('Turnstoned mcp login gone')
  H.wait('the login to fail', function()
    return #notes >= 2
  end, 60000, function()
    return vim.inspect(notes)
  end)
  H.eq(notes[1].msg, 'turnstoned: Logging in to gone…', 'at the start')
  H.eq(notes[2].level, vim.log.levels.ERROR, 'an error')
  H.ok(notes[2].msg:find("login to 'gone' failed", 1, true), notes[2].msg)
  local login = requests_of(methods.mcp_server_login)[1]
  H.eq({ login.params, login.err.code }, { { name = 'gone' }, codes.MCP_LOGIN_FAILED }, 'the request and its error')
  H.eq(notes[2].msg, 'turnstoned: ' .. login.err.message, "the daemon's message")
  H.eq(urls, {}, 'no page')

  notes = stub_notify()
  vim.cmd('Turnstoned mcp login nope')
  H.wait('the refusal', function()
    return #notes >= 2
  end)
  H.eq(notes[2].level, vim.log.levels.ERROR, 'an error')
  H.ok(notes[2].msg:find('nope', 1, true), notes[2].msg)
  H.eq(requests_of(methods.mcp_server_login)[2].err.code, codes.MCP_SERVER_NOT_FOUND, 'an unknown server')
end)

H.test(':Turnstoned mcp login picks o, opens its page, answers opened, and says when it connected', function()
  local notes = stub_notify()
  local urls = stub_open('browse')
  local seen = H.stub_select(function(_, labels)
    return H.find(labels, 'o ')
  end)
  local t0 = vim.uv.hrtime()
  vim.cmd('Turnstoned mcp login')
  -- The editor is not blocked while the login runs: the command returned at once.
  H.ok((vim.uv.hrtime() - t0) / 1e6 < 2000, 'the command returned without waiting')
  H.wait('the login to end', function()
    return #matching(notes, 'Logged in') > 0 or #matching(notes, 'failed') > 0
  end, 60000, function()
    return vim.inspect(notes)
  end)
  H.eq(seen[1].prompt, 'Log in to which MCP server?', 'the picker')
  H.ok(vim.startswith(seen[1].labels[1], 'o '), 'o comes first: ' .. vim.inspect(seen[1].labels))
  H.eq(requests_of(methods.mcp_server_login)[#requests_of(methods.mcp_server_login)].params, { name = 'o' },
    'the request names the choice')
  H.eq(#urls, 1, 'one page opened')
  H.ok(urls[1]:find(('^http://127.0.0.1:%s/authorize%%?'):format(port)), urls[1])
  local authorize = answers_to(methods.mcp_server_authorize)
  H.eq(#authorize, 1, 'one mcpServer/authorize')
  H.eq({ authorize[1].params.server, authorize[1].params.url, authorize[1].result },
    { 'o', urls[1], { opened = true } }, 'answered opened')
  H.eq(vim.tbl_map(function(n)
    return n.msg
  end, notes), {
    'turnstoned: Logging in to o…',
    'turnstoned: Log in to MCP server o in your browser: ' .. urls[1],
    'turnstoned: Logged in to o (1 tools)',
  }, 'what the user was told')
  local o = state('o')
  H.eq({ o.status, o.needsAuth, o.loggedIn }, { 'connected', false, true }, 'the daemon')
  H.eq(turnstoned.complete('', 'Turnstoned mcp logout '), { 'o' }, 'logout completes o')
  H.ok(mcp.label(o):find('1 tools  logged in', 1, true), mcp.label(o))
end)

H.test(':Turnstoned mcp logout offers the logged-in servers, forgets the tokens; the new need is told', function()
  local notes = stub_notify()
  local seen = H.stub_select(function(_, labels)
    return H.find(labels, 'o ')
  end)
  vim.cmd('Turnstoned mcp logout')
  H.wait('the logout and the reconnect', function()
    return #matching(notes, 'Logged out of o') > 0 and #matching(notes, 'needs you to log in') > 0
  end, 30000, function()
    return vim.inspect(notes)
  end)
  H.eq(seen[1].prompt, 'Log out of which MCP server?', 'the picker')
  H.eq(#seen[1].labels, 1, 'only o is logged in: ' .. vim.inspect(seen[1].labels))
  H.eq(requests_of(methods.mcp_server_logout)[1].params, { name = 'o' }, 'the request')
  H.eq(#matching(notes, 'MCP server o needs you to log in'), 1, 'told once')
  H.eq(state('o').loggedIn, false, 'no tokens')
end)

H.test('without a browser the address is shown (opened false) and opening it by hand logs in', function()
  local notes = stub_notify()
  local urls = stub_open('fail')
  vim.cmd('Turnstoned mcp login o')
  H.wait('the address', function()
    return #matching(notes, 'in your browser') > 0
  end, 30000)
  local shown = matching(notes, 'in your browser')[1]
  H.eq(shown.level, vim.log.levels.WARN, 'a warning: the user has to act')
  local url = shown.msg:match('in your browser: (%S+)')
  H.eq(url, urls[1], 'the address shown is the page')
  H.ok(shown.msg:find('no browser opened: vim.ui.open: no handler found', 1, true), shown.msg)
  local authorize = answers_to(methods.mcp_server_authorize)
  H.eq(authorize[#authorize].result, { opened = false }, 'answered opened = false')
  browse(url) -- the user opens it on their own machine
  H.wait('the login', function()
    return #matching(notes, 'Logged in to o (1 tools)') > 0
  end, 60000, function()
    return vim.inspect(notes)
  end)
end)

H.test('a login asked for again while it waits can be cancelled; o needs a login again', function()
  local told = stub_notify()
  vim.cmd('Turnstoned mcp logout o')
  H.wait('the logout and its "needs login"', function()
    return #matching(told, 'needs you to log in') > 0
  end, 30000)
  local notes = stub_notify()
  stub_open('ignore') -- the user never finishes in the browser
  vim.cmd('Turnstoned mcp login o')
  H.wait('the page', function()
    return #matching(notes, 'in your browser') > 0
  end, 30000)
  -- A turn to "needs login" while the login runs is the login's business: not told.
  local sc = methods.mcp_server_status_changed
  feed(sc, { name = 'o', status = 'connecting', tools = 0, needsAuth = false, loggedIn = false })
  feed(sc, { name = 'o', status = 'failed', tools = 0, needsAuth = true, loggedIn = false })
  H.eq(#matching(notes, 'needs you to log in'), 0, 'not told during the login')
  local seen = H.stub_select(function(_, labels)
    return H.find(labels, 'Cancel')
  end)
  vim.cmd('Turnstoned mcp login o')
  H.wait('the cancellation', function()
    return #matching(notes, 'cancelled') > 0
  end, 30000, function()
    return vim.inspect(notes)
  end)
  H.eq(seen[1].prompt, 'The login to o waits for your browser', 'asked again')
  H.eq(seen[1].labels, { 'Keep waiting', 'Cancel the login to o' }, 'the choices')
  H.eq(matching(notes, 'cancelled')[1].msg, 'turnstoned: the login to o was cancelled', 'said')
  H.wait('o to need a login again', function()
    local o = mcp.server('o')
    return o.status == 'failed' and o.needsAuth == true and (o.error or ''):find('cancelled', 1, true)
  end, 15000, function()
    return vim.inspect(mcp.server('o'))
  end)
  H.eq(#matching(notes, 'needs you to log in'), 0, 'the login the user cancelled is not nagged about')
end)

H.test('a tool call that needs more access: the page opens and its chat keeps the address', function()
  model.push({ text = 'Hi.' })
  turnstoned.ask('Hello')
  H.wait_turns(session.current(), 1)
  local chat = session.current()
  local notes = stub_notify()
  local urls = stub_open('ignore')
  local got
  handlers[methods.mcp_server_authorize]({ server = 'o', url = 'http://127.0.0.1:9/authorize?x=1', sessionId = chat.sid },
    function(r)
      got = r
    end, { on_withdraw = function() end })
  H.eq(got, { opened = true }, 'the answer')
  H.eq(urls, { 'http://127.0.0.1:9/authorize?x=1' }, 'opened')
  H.eq(#matching(notes, 'Log in to MCP server o in your browser: http://127.0.0.1:9/authorize?x=1'), 1, 'shown')
  H.ok(H.text(chat.buf):find('🔑 o asks you to log in (more access for this call): http://127.0.0.1:9/authorize?x=1',
    1, true), H.text(chat.buf))
end)

H.test(':checkhealth: a server needing a login is a warning naming the command', function()
  vim.cmd('checkhealth turnstoned')
  local report = H.text(0)
  H.ok(report:find('WARNING MCP o%s+failed%s+0 tools  needs login'), report)
  H.ok(report:find(':Turnstoned mcp login o logs in', 1, true), report)
end)

H.run()
