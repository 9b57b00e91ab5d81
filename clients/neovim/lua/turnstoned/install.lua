--- Finding the daemon command, and `:TurnstonedInstall`: the daemon in a private virtual
--- environment under `stdpath('data')/turnstoned/venv`, made without blocking Neovim.
local log = require('turnstoned.log')

local M = {}

--- The oldest Python the daemon runs on.
M.MIN_PYTHON = { 3, 11 }

--- The Python that makes the private environment.
M.python = 'python3'

--- The private environment's directory.
---@return string
function M.venv()
  return vim.fs.joinpath(vim.fn.stdpath('data'), 'turnstoned', 'venv')
end

--- The daemon inside the private environment.
---@return string
function M.venv_daemon()
  return vim.fs.joinpath(M.venv(), 'bin', 'turnstoned')
end

--- The plugin's directory (clients/neovim).
---@return string
local function plugin_dir()
  local here = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p')
  return vim.fs.dirname(vim.fs.dirname(vim.fs.dirname(here)))
end

--- What `pip install` gets: the repository the plugin lives in (two directories up from
--- clients/neovim, when it holds pyproject.toml), else the package index's `turnstoned`.
---@return string
function M.source()
  local repo = vim.fs.dirname(vim.fs.dirname(plugin_dir()))
  if vim.uv.fs_stat(vim.fs.joinpath(repo, 'pyproject.toml')) then
    return repo
  end
  return 'turnstoned'
end

---@class turnstoned.Resolved
---@field cmd? string[]      the command to start, nil when none is found
---@field from 'configured'|'path'|'venv'|'missing'
---@field found boolean      the command's program is executable

--- The daemon command, in this order: `cmd` configured (vim.g.turnstoned or setup()),
--- `turnstoned` on $PATH, the private environment's `turnstoned`.
---@param configured? string[]  the configured command, nil when none is
---@return turnstoned.Resolved
function M.resolve(configured)
  if configured then
    return { cmd = configured, from = 'configured', found = vim.fn.executable(configured[1]) == 1 }
  end
  if vim.fn.executable('turnstoned') == 1 then
    return { cmd = { 'turnstoned' }, from = 'path', found = true }
  end
  local private = M.venv_daemon()
  if vim.fn.executable(private) == 1 then
    return { cmd = { private }, from = 'venv', found = true }
  end
  return { from = 'missing', found = false }
end

--- The daemon command to start, from the configuration, and where it was found.
---@return turnstoned.Resolved
function M.daemon()
  local config = require('turnstoned.config')
  config.get() -- a configured cmd is valid
  return M.resolve(config.configured_cmd())
end

--- The command that shares this user's resident daemon (`turnstoned attach`), when `share`
--- is on and `cmd` is the daemon alone: a command with arguments (a subcommand, or options a
--- running daemon would not take) or another program (a wrapper script) starts as given.
---@param cmd string[]
---@param share boolean
---@return string[]? attach
function M.shared(cmd, share)
  if share and #cmd == 1 and vim.fs.basename(cmd[1]) == 'turnstoned' then
    return { cmd[1], 'attach' }
  end
end

--- The one line said when the command cannot start.
---@param r turnstoned.Resolved
---@return string
function M.not_found_message(r)
  if r.from == 'configured' then
    return ('the daemon command %s is not executable: fix vim.g.turnstoned.cmd, '
      .. 'see :checkhealth turnstoned, or remove cmd and run :TurnstonedInstall'):format(r.cmd[1])
  end
  return 'the daemon is not installed (no turnstoned on $PATH, no vim.g.turnstoned.cmd): '
    .. 'run :TurnstonedInstall, or see :checkhealth turnstoned'
end

--- Read `Python 3.12.1` (what `python3 --version` prints) into { 3, 12, 1 }.
---@param text string
---@return integer[]?
function M.parse_version(text)
  local major, minor, patch = (text or ''):match('Python%s+(%d+)%.(%d+)%.?(%d*)')
  if not major then
    return nil
  end
  return { tonumber(major), tonumber(minor), tonumber(patch) or 0 }
end

---@param v integer[]
---@return boolean
local function new_enough(v)
  return v[1] > M.MIN_PYTHON[1] or (v[1] == M.MIN_PYTHON[1] and v[2] >= M.MIN_PYTHON[2])
end

---@type boolean
local running = false

--- Whether an install is under way.
---@return boolean
function M.running()
  return running
end

---@param msg string
---@param level? integer
local function say(msg, level)
  vim.notify('turnstoned: ' .. msg, level or vim.log.levels.INFO)
end

--- Log a step's output, line by line.
---@param step string
---@param out vim.SystemCompleted
local function log_output(step, out)
  for _, stream in ipairs({ out.stdout or '', out.stderr or '' }) do
    for _, line in ipairs(vim.split(stream, '\n', { trimempty = true })) do
      log.info('install %s: %s', step, line)
    end
  end
end

--- Run `cmd` without blocking; `cb(out)` runs on the main loop.
---@param cmd string[]
---@param cb fun(out: vim.SystemCompleted)
local function run(cmd, cb)
  log.info('install: %s', table.concat(cmd, ' '))
  local ok, err = pcall(vim.system, cmd, { text = true }, function(out)
    vim.schedule(function()
      cb(out)
    end)
  end)
  if not ok then
    -- the program is not there: vim.system raises at spawn
    vim.schedule(function()
      cb({ code = 127, signal = 0, stdout = '', stderr = tostring(err) })
    end)
  end
end

--- Install the daemon into the private environment: check Python, make the environment,
--- `pip install` the source. Progress goes to vim.notify, the output to the plugin log.
--- `cb(err, daemon)` runs at the end (err nil on success).
---@param opts? { source?: string, python?: string }
---@param cb? fun(err?: string, daemon?: string)
function M.install(opts, cb)
  opts = opts or {}
  cb = cb or function() end
  if running then
    say('an install is already under way', vim.log.levels.WARN)
    return cb('an install is already under way')
  end
  running = true
  local python = opts.python or M.python
  local source = opts.source or M.source()
  local venv = M.venv()
  local started = vim.uv.hrtime()
  local function fail(msg)
    running = false
    log.error('install failed: %s', msg)
    say(msg .. ' (details: :TurnstonedLog)', vim.log.levels.ERROR)
    cb(msg)
  end
  say(('installing the daemon into %s'):format(venv))
  run({ python, '--version' }, function(out)
    log_output('python', out)
    if out.code ~= 0 then
      return fail(('Python not found: `%s --version` failed; install Python %d.%d or newer'):format(
        python, M.MIN_PYTHON[1], M.MIN_PYTHON[2]))
    end
    local v = M.parse_version((out.stdout or '') .. (out.stderr or ''))
    if not v then
      return fail(('cannot read the version of %s: %s'):format(python, vim.trim(out.stdout .. out.stderr)))
    end
    if not new_enough(v) then
      return fail(('Python %d.%d.%d is too old: turnstoned needs Python %d.%d or newer'):format(
        v[1], v[2], v[3], M.MIN_PYTHON[1], M.MIN_PYTHON[2]))
    end
    say(('1/2 making a virtual environment with Python %d.%d.%d'):format(v[1], v[2], v[3]))
    vim.fn.mkdir(vim.fs.dirname(venv), 'p')
    run({ python, '-m', 'venv', venv }, function(out2)
      log_output('venv', out2)
      if out2.code ~= 0 then
        return fail(('`%s -m venv` failed: %s'):format(python, vim.trim(out2.stderr or '')))
      end
      say(('2/2 pip install %s (this takes a while)'):format(source))
      run({ vim.fs.joinpath(venv, 'bin', 'pip'), 'install', '--disable-pip-version-check', source },
        function(out3)
          log_output('pip', out3)
          if out3.code ~= 0 then
            local tail = vim.split(vim.trim(out3.stderr or ''), '\n')
            return fail('pip install failed: ' .. (tail[#tail] or ''))
          end
          local daemon = M.venv_daemon()
          if vim.fn.executable(daemon) ~= 1 then
            return fail('pip install left no ' .. daemon)
          end
          running = false
          say(('installed %s (%.0f s)'):format(daemon, (vim.uv.hrtime() - started) / 1e9))
          cb(nil, daemon)
        end)
    end)
  end)
end

--- Offer the install (a question when a UI is attached, else one line pointing to the command).
function M.offer()
  if running then
    return
  end
  if #vim.api.nvim_list_uis() == 0 then
    return say(M.not_found_message({ from = 'missing', found = false }), vim.log.levels.WARN)
  end
  vim.ui.select({ 'Install it now', 'Not now' }, {
    prompt = 'turnstoned: the daemon is not installed. Install it into ' .. M.venv() .. '?',
  }, function(choice)
    if choice == 'Install it now' then
      M.install()
    end
  end)
end

return M
