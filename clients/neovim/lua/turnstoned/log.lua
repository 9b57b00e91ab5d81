--- The plugin's log: a ring of recent lines shown by `:TurnstonedLog`, also appended to
--- `stdpath('log')/turnstoned.log`.
local M = {}

local LEVELS = { debug = 1, info = 2, warn = 3, error = 4 }
local MAX_LINES = 2000

---@type string[]
local ring = {}
local first = 1

---@return string
function M.path()
  return vim.fs.joinpath(vim.fn.stdpath('log'), 'turnstoned.log')
end

---@return integer
local function threshold()
  local ok, config = pcall(function()
    return require('turnstoned.config').get()
  end)
  return LEVELS[ok and config.log_level or 'info']
end

---@param line string
local function to_file(line)
  local file = io.open(M.path(), 'a')
  if file then
    file:write(line, '\n')
    file:close()
  end
end

---@param level 'debug'|'info'|'warn'|'error'
---@param fmt string
---@param ... any
function M.write(level, fmt, ...)
  if LEVELS[level] < threshold() then
    return
  end
  local ok, text = pcall(string.format, fmt, ...)
  local line = ('%s %-5s %s'):format(os.date('%H:%M:%S'), level:upper(), ok and text or fmt)
  ring[#ring + 1] = line
  if #ring - first + 1 > MAX_LINES then
    ring[first] = nil
    first = first + 1
  end
  to_file(line)
end

function M.debug(...)
  M.write('debug', ...)
end
function M.info(...)
  M.write('info', ...)
end
function M.warn(...)
  M.write('warn', ...)
end
function M.error(...)
  M.write('error', ...)
end

--- The recent lines, oldest first.
---@return string[]
function M.lines()
  local out = {}
  for i = first, #ring do
    out[#out + 1] = ring[i]
  end
  return out
end

--- The daemon's stderr: `vim.lsp.rpc` records it in the LSP log, tagged with the command.
---@param cmd0 string the daemon command's first word
---@param limit integer
---@return string[]
function M.daemon_stderr(cmd0, limit)
  local file = io.open(vim.lsp.log.get_filename(), 'r')
  if not file then
    return {}
  end
  local out = {}
  local needle = '"' .. cmd0 .. '"\t"stderr"\t'
  for line in file:lines() do
    local at = line:find(needle, 1, true)
    if at then
      -- The chunk is logged quoted, with its newline escaped.
      local chunk = line:sub(at + #needle)
      local quote = chunk:sub(1, 1)
      if (quote == "'" or quote == '"') and chunk:sub(-1) == quote then
        chunk = chunk:sub(2, -2)
      end
      out[#out + 1] = (chunk:gsub('\\n$', ''))
      if #out > limit then
        table.remove(out, 1)
      end
    end
  end
  file:close()
  return out
end

--- Open a buffer with the recent log lines and the daemon's stderr.
---@param cmd0 string the daemon command's first word
function M.show(cmd0)
  local lines = vim.list_extend({ '# turnstoned.nvim log (' .. M.path() .. ')' }, M.lines())
  vim.list_extend(lines, { '', '# daemon stderr (from ' .. vim.lsp.log.get_filename() .. ')' })
  vim.list_extend(lines, M.daemon_stderr(cmd0, 500))
  vim.cmd('botright new')
  local buf = vim.api.nvim_get_current_buf()
  vim.bo[buf].buftype, vim.bo[buf].bufhidden, vim.bo[buf].swapfile = 'nofile', 'wipe', false
  pcall(vim.api.nvim_buf_set_name, buf, 'turnstoned://log')
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.api.nvim_win_set_cursor(0, { #lines, 0 })
end

return M
