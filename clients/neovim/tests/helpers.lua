--- What the specs share: a tiny test runner, bounded waits, the scripted model server and a
--- daemon configuration isolated in a temporary home.
local H = {}

local api = vim.api

H.tests_dir = vim.fs.dirname(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p'))
H.plugin_dir = vim.fs.dirname(H.tests_dir)
H.repo = vim.fs.dirname(vim.fs.dirname(H.plugin_dir))
H.python = vim.env.TURNSTONED_TEST_PYTHON or (H.repo .. '/.venv/bin/python')
H.daemon = vim.env.TURNSTONED_TEST_DAEMON or (H.repo .. '/.venv/bin/turnstoned')
-- The screens the specs record go to tests/out/ (ignored by git), so a run leaves the
-- checkout clean; TURNSTONED_UPDATE_ARTIFACTS=1 refreshes the committed tests/artifacts/.
H.artifacts = H.tests_dir .. (vim.env.TURNSTONED_UPDATE_ARTIFACTS == '1' and '/artifacts' or '/out')
-- Specs run side by side and each makes sure the directory exists: another may create it
-- between mkdir's check and its own create, which mkdir reports as an error.
pcall(vim.fn.mkdir, H.artifacts, 'p')
assert(vim.fn.isdirectory(H.artifacts) == 1, 'cannot create ' .. H.artifacts)

-- ---------------------------------------------------------------- runner

local tests = {}

--- Register a test; `H.run()` runs them in order.
---@param name string
---@param fn fun()
function H.test(name, fn)
  tests[#tests + 1] = { name = name, fn = fn }
end

--- Run the registered tests and exit: 0 when all passed.
function H.run()
  local failed = 0
  for _, t in ipairs(tests) do
    local started = vim.uv.hrtime()
    local ok, err = xpcall(t.fn, debug.traceback)
    local ms = (vim.uv.hrtime() - started) / 1e6
    if ok then
      io.stdout:write(('  ok    %s (%.0f ms)\n'):format(t.name, ms))
    else
      failed = failed + 1
      io.stdout:write(('  FAIL  %s (%.0f ms)\n%s\n'):format(t.name, ms, err))
    end
  end
  if H.cleanup then
    pcall(H.cleanup)
  end
  io.stdout:flush()
  os.exit(failed == 0 and 0 or 1)
end

-- ---------------------------------------------------------------- assertions

---@param cond any
---@param msg string
function H.ok(cond, msg)
  if not cond then
    error('expected: ' .. msg, 2)
  end
end

---@param got any
---@param want any
---@param what? string
function H.eq(got, want, what)
  if not vim.deep_equal(got, want) then
    error(('%s: expected %s, got %s'):format(what or 'value', vim.inspect(want), vim.inspect(got)), 2)
  end
end

--- Wait (bounded) until `pred()` is truthy; fail with `what` otherwise.
---@param what string
---@param pred fun(): any
---@param timeout_ms? integer
---@param seen? fun(): string  what there was instead, for the message
function H.wait(what, pred, timeout_ms, seen)
  if not vim.wait(timeout_ms or 15000, pred, 10) then
    error('timed out waiting for ' .. what .. (seen and (': ' .. seen()) or '') .. H.log_tail(), 2)
  end
end

--- The last lines of the plugin's log, to say what happened when a wait times out.
---@return string
function H.log_tail()
  local ok, lines = pcall(vim.fn.readfile, require('turnstoned.log').path(), '', -15)
  return ok and #lines > 0 and ('\n-- the plugin log ends:\n' .. table.concat(lines, '\n')) or ''
end

---@param buf integer
---@return string
function H.text(buf)
  return table.concat(api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
end

-- ---------------------------------------------------------------- the scripted model

---@class turnstoned.test.Model
---@field base_url string
---@field push fun(...: table)
---@field requests fun(): integer
---@field request fun(n: integer): {messages: table[], tools: string[], model: string}
---@field open fun(gate: string)  a `{gated = gate, before = …, after = …}` reply goes on
---@field stop fun()

--- Start the repository's scripted OpenAI-compatible server (through a launcher), on `port`
--- of 127.0.0.1 when given.
---@param port? integer
---@return turnstoned.test.Model
function H.model(port)
  local lines = {}
  local buffered = ''
  local argv = { H.python, H.tests_dir .. '/model_launcher.py' }
  if port then
    vim.list_extend(argv, { '--port', tostring(port) })
  end
  local proc = vim.system(argv, {
    stdin = true,
    stdout = function(_, data)
      buffered = buffered .. (data or '')
      while buffered:find('\n') do
        local line, rest = buffered:match('^(.-)\n(.*)$')
        lines[#lines + 1], buffered = line, rest
      end
    end,
  })
  H.wait('the model server to start', function()
    return #lines > 0
  end)
  local answers = 1
  local function command(cmd)
    proc:write(vim.json.encode(cmd) .. '\n')
    answers = answers + 1
    local want = answers
    H.wait('the model server to answer', function()
      return #lines >= want
    end)
    return vim.json.decode(lines[want])
  end
  return {
    base_url = lines[1],
    push = function(...)
      command({ push = { ... } })
    end,
    requests = function()
      return command({ requests = true }).count
    end,
    request = function(n)
      return command({ request = n })
    end,
    open = function(gate)
      command({ open = gate })
    end,
    stop = function()
      proc:write(nil)
      proc:wait(5000)
    end,
  }
end

--- Point the plugin at the repository's daemon and `model`, in a fresh temporary home.
---@param model turnstoned.test.Model
---@param extra? table more options
---@return string home
function H.configure(model, extra)
  local home = vim.fn.tempname()
  vim.fn.mkdir(home, 'p')
  H.workspace = home .. '/work'
  vim.fn.mkdir(H.workspace, 'p')
  vim.g.turnstoned = vim.tbl_extend('force', {
    cmd = { H.daemon },
    -- A daemon of each spec's own: shared_spec covers the resident daemon shared by default.
    share_daemon = false,
    cwd = H.workspace,
    env = {
      TURNSTONED_HOME = home,
      OPENAI_BASE_URL = model.base_url,
      OPENAI_API_KEY = 'sk-test',
      TURNSTONED_MODEL = 'scripted',
    },
  }, extra or {})
  -- Specs run in read-only mode unless their toml names one: in the daemon's default (auto)
  -- commands run in the sandbox unasked, and a spec about asking would see no question.
  vim.fn.mkdir(home .. '/config', 'p')
  vim.fn.writefile({ '[approvals]', 'mode = "read-only"' }, home .. '/config/config.toml')
  return home
end

--- Start the scripted model, point the plugin at it and stop both when the spec ends.
--- `toml` lines become the daemon's config.toml.
---@param toml? string[]
---@return turnstoned.test.Model model, string home
function H.with_daemon(toml)
  local model = H.model()
  local home = H.configure(model)
  if toml then
    local named = vim.iter(toml):any(function(line)
      return line:match('^%s*%[approvals%]') ~= nil
    end)
    vim.fn.writefile(named and toml or vim.list_extend(vim.list_extend({}, toml), { '[approvals]', 'mode = "read-only"' }), home .. '/config/config.toml')
  end
  H.cleanup = function()
    require('turnstoned').stop()
    model.stop()
  end
  return model, home
end

--- Stub `vim.ui.select`: `pick(items, labels, opts)` returns the index to choose (nil
--- dismisses, false leaves the prompt open). Returns the list of prompts seen.
---@param pick fun(items: table[], labels: string[], opts: table): integer|false|nil
---@return table[] seen
function H.stub_select(pick)
  local seen = {}
  vim.ui.select = function(items, opts, on_choice)
    local labels = vim.tbl_map(opts.format_item or tostring, items)
    seen[#seen + 1] = { prompt = opts.prompt, labels = labels }
    local i = pick(items, labels, opts)
    if i ~= false then
      vim.schedule(function()
        on_choice(i and items[i] or nil, i)
      end)
    end
  end
  return seen
end

--- The index of the first label starting with `prefix`.
---@param labels string[]
---@param prefix string
---@return integer
function H.find(labels, prefix)
  for i, label in ipairs(labels) do
    if vim.startswith(label, prefix) then
      return i
    end
  end
  error(('no choice starting with %q in %s'):format(prefix, vim.inspect(labels)), 2)
end

--- Record what `vim.notify` is given from now on: the texts, in order.
---@return string[]
function H.record_notify()
  local notes = {}
  vim.notify = function(msg)
    notes[#notes + 1] = msg
  end
  return notes
end

--- Start the plugin's connection and wait (bounded) until it answers.
---@param timeout_ms? integer
---@return string? err the start's error, nil when it is ready
function H.start_client(timeout_ms)
  local done, err = false, nil
  require('turnstoned.client').start(function(e)
    done, err = true, e
  end)
  H.wait('the daemon to start', function()
    return done
  end, timeout_ms or 30000)
  return err
end

--- Run an Ex command and wait for the first `vim.notify` it leads to; returns its text.
---@param command string
---@param what string
---@return string
function H.notified_by(command, what)
  local notes = H.record_notify()
  vim.cmd(command)
  H.wait(what, function()
    return #notes > 0
  end, 30000)
  return notes[1]
end

--- Stub `vim.ui.input` to answer `text`.
---@param text? string
function H.stub_input(text)
  vim.ui.input = function(_, on_confirm)
    vim.schedule(function()
      on_confirm(text)
    end)
  end
end

--- Wait until `chat` has seen `n` turns end.
---@param chat turnstoned.Chat
---@param n integer
function H.wait_turns(chat, n)
  H.wait(('turn %d to end'):format(n), function()
    return (chat.turns_completed or 0) >= n
  end)
end

--- Stop the daemon, wipe `chat`'s buffer, and resume its session in a fresh daemon.
---@param chat turnstoned.Chat
---@return turnstoned.Chat
function H.resume_after_restart(chat)
  local sid = chat.sid
  require('turnstoned').stop()
  vim.cmd.bwipeout(chat.buf)
  local resumed
  require('turnstoned').resume(sid, function(_, c)
    resumed = c
  end)
  H.wait('the resumed chat', function()
    return resumed ~= nil
  end)
  return resumed
end

-- ---------------------------------------------------------------- screen dump

---@param buf integer
---@param row integer 0-based
---@return string eol, string[] below
local function virtual(buf, row)
  local eol, below = '', {}
  local marks = api.nvim_buf_get_extmarks(buf, -1, { row, 0 }, { row, -1 }, { details = true })
  for _, m in ipairs(marks) do
    for _, chunk in ipairs(m[4].virt_text or {}) do
      eol = eol .. chunk[1]
    end
    for _, vline in ipairs(m[4].virt_lines or {}) do
      below[#below + 1] = table.concat(vim.tbl_map(function(c)
        return c[1]
      end, vline))
    end
  end
  return eol, below
end

--- What a chat window shows: its winbar, closed folds as their fold line, virtual text.
---@param win integer
---@return string[]
function H.screen(win)
  local buf = api.nvim_win_get_buf(win)
  local winbar = api.nvim_eval_statusline(vim.wo[win].winbar, { winid = win, use_winbar = true })
  local out = { winbar.str, string.rep('─', api.nvim_win_get_width(win)) }
  api.nvim_win_call(win, function()
    local lnum, last = 1, vim.fn.line('$')
    while lnum <= last do
      local fold_end = vim.fn.foldclosedend(lnum)
      local text = fold_end > 0 and ('+ ' .. vim.fn.foldtextresult(lnum))
        or api.nvim_buf_get_lines(buf, lnum - 1, lnum, false)[1]
      local eol, below = virtual(buf, lnum - 1)
      out[#out + 1] = text .. (fold_end > 0 and '' or eol)
      vim.list_extend(out, below)
      lnum = fold_end > 0 and fold_end + 1 or lnum + 1
    end
  end)
  return out
end

return H
