-- Finding the daemon and :TurnstonedInstall: the lookup order, the errors, a real install.
local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/../helpers.lua')

local install = require('turnstoned.install')
local config = require('turnstoned.config')

--- Run `fn` with vim.fn.executable answering 1 for the names in `present` only.
---@param present string[]
---@param fn fun()
local function with_executables(present, fn)
  local real = vim.fn.executable
  local set = {}
  for _, name in ipairs(present) do
    set[name] = true
  end
  vim.fn.executable = function(name)
    return set[name] and 1 or 0
  end
  local ok, err = pcall(fn)
  vim.fn.executable = real
  if not ok then
    error(err, 0)
  end
end

--- Run `fn` with this vim.g.turnstoned.
local function with_config(value, fn)
  local saved = vim.g.turnstoned
  vim.g.turnstoned = value
  local ok, err = pcall(fn)
  vim.g.turnstoned = saved
  if not ok then
    error(err, 0)
  end
end

--- A directory with a `python3` that prints `answer` for --version.
---@param answer string
---@return string dir
local function fake_python(answer)
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir, 'p')
  vim.fn.writefile({ '#!/bin/sh', ('echo %q'):format(answer), 'exit 0' }, dir .. '/python3')
  vim.fn.setfperm(dir .. '/python3', 'rwxr-xr-x')
  return dir
end

--- Run install() and wait for its end; the error, the daemon and what vim.notify showed.
---@param opts? table
---@param timeout_ms integer
---@return string? err, string? daemon, string[] notes
local function run_install(opts, timeout_ms)
  local notes = {}
  local notify = vim.notify
  vim.notify = function(msg)
    notes[#notes + 1] = msg
  end
  local done, err, daemon = false, nil, nil
  install.install(opts, function(e, d)
    done, err, daemon = true, e, d
  end)
  local ok = vim.wait(timeout_ms, function()
    return done
  end, 50)
  vim.notify = notify
  assert(ok, 'the install did not end within ' .. timeout_ms .. ' ms: ' .. table.concat(notes, ' | '))
  return err, daemon, notes
end

local venv_daemon = install.venv_daemon()

H.test('the lookup order: configured cmd, then $PATH, then the private environment', function()
  with_config({ cmd = { '/opt/daemon', 'attach' } }, function()
    with_executables({ '/opt/daemon', 'turnstoned', venv_daemon }, function()
      local r = install.daemon()
      H.eq({ r.from, r.found, r.cmd }, { 'configured', true, { '/opt/daemon', 'attach' } }, 'configured first')
    end)
  end)
  with_config(nil, function()
    with_executables({ 'turnstoned', venv_daemon }, function()
      local r = install.daemon()
      H.eq({ r.from, r.found, r.cmd }, { 'path', true, { 'turnstoned' } }, '$PATH next')
    end)
    with_executables({ venv_daemon }, function()
      local r = install.daemon()
      H.eq({ r.from, r.found, r.cmd }, { 'venv', true, { venv_daemon } }, 'the private environment last')
    end)
    with_executables({}, function()
      local r = install.daemon()
      H.eq({ r.from, r.found, r.cmd }, { 'missing', false, nil }, 'none')
    end)
  end)
  -- setup()'s cmd counts as configured too
  with_config(nil, function()
    config.set({ cmd = { '/from/setup' } })
    with_executables({ 'turnstoned' }, function()
      local r = install.daemon()
      H.eq({ r.from, r.found, r.cmd }, { 'configured', false, { '/from/setup' } }, "setup()'s cmd, not $PATH")
    end)
    config.set({})
  end)
  H.eq(install.venv(), vim.fs.joinpath(vim.fn.stdpath('data'), 'turnstoned', 'venv'), 'the venv place')
  H.eq(install.source(), H.repo, 'the source is the repository the plugin is in')
end)

H.test('a wrong configured command gives one clear line, not a vim.lsp error', function()
  local client = require('turnstoned.client')
  with_config({ cmd = { '/nonexistent/turnstoned' } }, function()
    local err = H.start_client(5000)
    H.ok(err and not err:find('\n'), 'one line: ' .. tostring(err))
    for _, want in ipairs({ '/nonexistent/turnstoned', 'vim.g.turnstoned.cmd', ':checkhealth', ':TurnstonedInstall' }) do
      H.ok(err:find(want, 1, true), ('%q in %q'):format(want, err))
    end
    H.eq(client.info().state, 'failed', 'the client state')
  end)
end)

H.test('no daemon at all: the start says to run :TurnstonedInstall, :checkhealth too', function()
  local client = require('turnstoned.client')
  with_config(nil, function()
    with_executables({}, function()
      local notes = {}
      local notify = vim.notify
      vim.notify = function(msg)
        notes[#notes + 1] = msg
      end
      local done, err = false, nil
      client.start(function(e)
        done, err = true, e
      end)
      vim.notify = notify
      H.ok(done and err and err:find(':TurnstonedInstall', 1, true), 'the start error: ' .. tostring(err))
      H.ok(#notes == 1 and notes[1]:find(':TurnstonedInstall', 1, true),
        'headless, the offer is one line: ' .. vim.inspect(notes))
      vim.cmd('checkhealth turnstoned')
      local report = H.text(vim.api.nvim_get_current_buf())
      vim.cmd.bwipeout()
      H.ok(report:find('ERROR the daemon is not installed', 1, true), 'the error:\n' .. report)
      H.ok(report:find(':TurnstonedInstall installs it into ' .. install.venv(), 1, true),
        'the advice names :TurnstonedInstall:\n' .. report)
    end)
  end)
end)

H.test('a too old or missing Python is a clear error, and nothing is made', function()
  local path = vim.env.PATH
  vim.env.PATH = fake_python('Python 3.9.18') .. ':' .. path
  local err, _, notes = run_install(nil, 10000)
  vim.env.PATH = path
  H.eq(err, 'Python 3.9.18 is too old: turnstoned needs Python 3.11 or newer', 'the error')
  H.ok(notes[#notes]:find('too old', 1, true), 'shown: ' .. vim.inspect(notes))
  H.eq(vim.fn.isdirectory(install.venv()), 0, 'no environment made')

  err = run_install({ python = '/nonexistent/python3' }, 10000)
  H.ok(err and err:find('Python not found', 1, true) and err:find('3.11', 1, true), 'missing: ' .. tostring(err))
  H.eq(install.parse_version('Python 3.12.1'), { 3, 12, 1 }, 'a version read')
  H.eq(install.parse_version('Python 3.13.0rc1'), { 3, 13, 0 }, 'a pre-release read')
end)

H.test(':TurnstonedInstall installs from the repository into stdpath("data"), the plugin then uses it', function()
  local data = vim.fn.tempname()
  local saved_data = vim.env.XDG_DATA_HOME
  vim.env.XDG_DATA_HOME = data
  H.eq(install.venv(), data .. '/nvim/turnstoned/venv', 'stdpath("data") follows XDG_DATA_HOME')
  -- no turnstoned on $PATH, so the plugin must find the installed one
  local path = vim.env.PATH
  vim.env.PATH = table.concat(vim.tbl_filter(function(dir)
    return vim.fn.executable(dir .. '/turnstoned') ~= 1
  end, vim.split(path, ':')), ':')
  local started = vim.uv.hrtime()
  local loop_ms, ticks = 0, 0
  local timer = vim.uv.new_timer()
  local last = vim.uv.hrtime()
  timer:start(100, 100, vim.schedule_wrap(function()
    local now = vim.uv.hrtime()
    loop_ms = math.max(loop_ms, (now - last) / 1e6)
    last, ticks = now, ticks + 1
  end))
  local err, daemon, notes = run_install(nil, 180000)
  timer:stop()
  timer:close()
  local seconds = (vim.uv.hrtime() - started) / 1e9
  io.stdout:write(('        install took %.1f s\n'):format(seconds))
  H.ok(not err, 'installed: ' .. tostring(err) .. '\n' .. table.concat(require('turnstoned.log').lines(), '\n'))
  H.eq(daemon, data .. '/nvim/turnstoned/venv/bin/turnstoned', 'the daemon path')
  H.ok(#notes >= 3 and notes[#notes]:find('installed', 1, true), 'progress shown: ' .. vim.inspect(notes))
  H.ok(ticks > 0 and loop_ms < 2000, ('Neovim did not block (longest gap %.0f ms)'):format(loop_ms))
  local logged = table.concat(require('turnstoned.log').lines(), '\n')
  H.ok(logged:find('install pip:', 1, true), "pip's output is in the plugin log")

  -- Not shared: a resident daemon would outlive this spec, outside its TURNSTONED_HOME.
  with_config({ share_daemon = false }, function()
    local r = install.daemon()
    H.eq({ r.from, r.cmd }, { 'venv', { daemon } }, 'the plugin picks the installed daemon')
    local e = H.start_client(30000)
    H.ok(not e, 'it starts: ' .. tostring(e))
    require('turnstoned').stop()
  end)
  vim.env.PATH = path
  vim.env.XDG_DATA_HOME = saved_data
  vim.fn.delete(data, 'rf')
end)

H.run()
