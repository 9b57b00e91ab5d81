--- Configuration: defaults, merged with `vim.g.turnstoned` and the optional `setup()` table.
---
--- Read on every use, so a change to `vim.g.turnstoned` applies to the next daemon start or
--- window that opens.
local M = {}

---@class turnstoned.Keymaps
---@field send? string|false            prompt buffer, normal mode: send the prompt
---@field send_insert? string|false     prompt buffer, insert and normal mode: send the prompt
---@field interrupt? string|false       chat and prompt buffers, normal mode: interrupt the turn
---@field close? string|false           chat and prompt buffers, normal mode: close the windows
---@field diff_approve? string|false    review tab: approve this change
---@field diff_deny? string|false       review tab: deny this change (asks for a reason)
---@field preview_open? string|false    web preview: open the page in the system viewer
---@field diff_drop? string|false       review tab: drop the hunk under the cursor from the proposal
---@field changes_diff? string|false    changes list: before and after of the file under the cursor
---@field changes_keep? string|false    changes list: keep the file as the turn left it
---@field changes_undo? string|false    changes list: undo the turn's change of this file

---@class turnstoned.Config
---@field cmd string[]                  the daemon command
---@field share_daemon boolean          a bare `turnstoned` command shares the resident daemon (`turnstoned attach`)
---@field env table<string,string>      extra environment for the daemon
---@field cwd? string                   working directory of new sessions (default: `getcwd()`)
---@field layout 'vertical'|'horizontal'|'float'|'tab'
---@field width number                  vertical/float: columns, or a fraction of the screen
---@field height number                 horizontal/float: lines, or a fraction of the screen
---@field prompt_height integer         lines of the prompt window under the chat
---@field auto_scroll boolean           a chat window whose cursor is on the last line follows
---@field fold_tools boolean            tool calls and reasoning start folded
---@field keymaps turnstoned.Keymaps
---@field log_level 'debug'|'info'|'warn'|'error'
---@field mode? turnstoned.ApprovalMode  approval mode of new sessions (default: the daemon's)
---@field editor_context boolean       each prompt carries the editor state (file, selection, diagnostics)
---@field auto_complete boolean        the prompt's completion menu opens as you type `@` or `/`

---@type turnstoned.Config
M.defaults = {
  cmd = { 'turnstoned' },
  share_daemon = true,
  env = {},
  cwd = nil,
  layout = 'vertical',
  width = 0.4,
  height = 0.4,
  prompt_height = 5,
  auto_scroll = true,
  fold_tools = true,
  keymaps = {
    send = '<CR>',
    send_insert = '<C-s>',
    interrupt = '<C-c>',
    close = 'q',
    diff_approve = 'ga',
    diff_deny = 'gr',
    preview_open = 'gx',
    diff_drop = 'gd',
    changes_diff = '<CR>',
    changes_keep = 'gk',
    changes_undo = 'gu',
  },
  log_level = 'info',
  editor_context = true,
  auto_complete = true,
}

---@type table
local from_setup = {}

local LAYOUTS = { vertical = true, horizontal = true, float = true, tab = true }
local LEVELS = { debug = true, info = true, warn = true, error = true }

--- The approval modes, in the order they are offered.
M.MODES = { 'read-only', 'auto', 'full-access', 'plan' }

---@param name string
---@param ok boolean
---@param expected string
local function check(name, ok, expected)
  if not ok then
    error(('turnstoned: option %s must be %s'):format(name, expected), 0)
  end
end

---@param v any
---@return boolean
local function string_list(v)
  if type(v) ~= 'table' or #v == 0 then
    return false
  end
  for _, s in ipairs(v) do
    if type(s) ~= 'string' then
      return false
    end
  end
  return true
end

---@param c turnstoned.Config
local function validate(c)
  for key in pairs(c) do
    if M.defaults[key] == nil and key ~= 'cwd' and key ~= 'mode' then
      error(('turnstoned: unknown option %s (see :help turnstoned-config)'):format(key), 0)
    end
  end
  check('cmd', string_list(c.cmd), 'a non-empty list of strings')
  check('share_daemon', type(c.share_daemon) == 'boolean', 'a boolean')
  check('env', type(c.env) == 'table', 'a table')
  check('cwd', c.cwd == nil or type(c.cwd) == 'string', 'a string')
  check('layout', LAYOUTS[c.layout] ~= nil, "'vertical', 'horizontal', 'float' or 'tab'")
  check('width', type(c.width) == 'number' and c.width > 0, 'a positive number')
  check('height', type(c.height) == 'number' and c.height > 0, 'a positive number')
  check('prompt_height', type(c.prompt_height) == 'number' and c.prompt_height >= 1, 'a number >= 1')
  check('auto_scroll', type(c.auto_scroll) == 'boolean', 'a boolean')
  check('fold_tools', type(c.fold_tools) == 'boolean', 'a boolean')
  check('keymaps', type(c.keymaps) == 'table', 'a table')
  for name, lhs in pairs(c.keymaps) do
    check('keymaps.' .. name, lhs == false or type(lhs) == 'string', 'a key string or false')
  end
  check('editor_context', type(c.editor_context) == 'boolean', 'a boolean')
  check('auto_complete', type(c.auto_complete) == 'boolean', 'a boolean')
  check('log_level', LEVELS[c.log_level] ~= nil, "'debug', 'info', 'warn' or 'error'")
  check('mode', c.mode == nil or vim.tbl_contains(M.MODES, c.mode),
    "'read-only', 'auto', 'full-access' or 'plan'")
end

--- Remember the options given to `setup()`; they win over `vim.g.turnstoned`.
---@param opts? table
function M.set(opts)
  check('setup()', opts == nil or type(opts) == 'table', 'called with a table')
  from_setup = opts or {}
  M.get() -- validate now, so a typo shows at setup() time
end

--- The effective configuration.
---@return turnstoned.Config
function M.get()
  local user = vim.g.turnstoned
  if user ~= nil and type(user) ~= 'table' then
    error('turnstoned: vim.g.turnstoned must be a table', 0)
  end
  local c = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), user or {}, from_setup)
  -- A list replaces, it does not merge by index.
  c.cmd = (from_setup.cmd or (user or {}).cmd or M.defaults.cmd)
  validate(c)
  return c
end

--- The daemon command the user configured (setup() or vim.g.turnstoned), nil when none is:
--- then the plugin looks for `turnstoned` on $PATH and in its private environment.
---@return string[]?
function M.configured_cmd()
  local user = type(vim.g.turnstoned) == 'table' and vim.g.turnstoned or {}
  return from_setup.cmd or user.cmd
end

--- A size option: a fraction of `total`, or an absolute count.
---@param value number
---@param total integer
---@return integer
function M.size(value, total)
  if value > 0 and value < 1 then
    return math.max(1, math.floor(total * value))
  end
  return math.max(1, math.floor(value))
end

return M
