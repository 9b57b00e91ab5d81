--- Editing a call's arguments before it runs: a bash command as one line of text
--- (`vim.ui.input`), anything else as JSON in a scratch buffer that `:write` submits.
local config = require('turnstoned.config')
local questions = require('turnstoned.questions')

local api = vim.api
local M = {}

--- The arguments object as JSON, one key per line (sorted), for editing.
---@param args table
---@return string[]
function M.pretty(args)
  local keys = vim.tbl_keys(args)
  table.sort(keys)
  if #keys == 0 then
    return { '{}' }
  end
  local out = { '{' }
  for i, key in ipairs(keys) do
    out[#out + 1] = ('  %s: %s%s'):format(vim.json.encode(key), vim.json.encode(args[key]),
      i < #keys and ',' or '')
  end
  out[#out + 1] = '}'
  return out
end

--- The JSON object a buffer holds, or nil and why not.
---@param lines string[]
---@return table? args, string? problem
function M.parse(lines)
  local text = table.concat(lines, '\n')
  local ok, value = pcall(vim.json.decode, text)
  if not ok then
    return nil, 'not JSON: ' .. tostring(value)
  elseif type(value) ~= 'table' or not text:match('^%s*{') then
    return nil, 'the arguments must be a JSON object'
  end
  return value
end

---@param tab integer
local function close_tab(tab)
  if not api.nvim_tabpage_is_valid(tab) then
    return
  end
  if #api.nvim_list_tabpages() > 1 then
    vim.cmd.tabclose(api.nvim_tabpage_get_number(tab))
  else
    vim.cmd.enew()
  end
end

--- Edit `args` as JSON in a new tab: `:write` submits them (`on_done(args)`), the close
--- key goes back without them (`on_done(nil)`).
---@param q turnstoned.Question
---@param item turnstoned.ApprovalRequestItem
---@param args table
---@param on_done fun(args?: table)
local function edit_json(q, item, args, on_done)
  vim.cmd.tabnew()
  local tab, buf = api.nvim_get_current_tabpage(), api.nvim_get_current_buf()
  pcall(api.nvim_buf_set_name, buf, ('turnstoned://edit/%s/%s.json'):format(item.callId:sub(1, 8), item.tool))
  vim.bo[buf].buftype, vim.bo[buf].bufhidden, vim.bo[buf].swapfile = 'acwrite', 'wipe', false
  api.nvim_buf_set_lines(buf, 0, -1, false, M.pretty(args))
  vim.bo[buf].modified, vim.bo[buf].filetype = false, 'json'
  local close = config.get().keymaps.close
  vim.wo[0][0].winbar = (' %%<edit %s: :w runs it as written%%=%s back '):format(
    (item.header or item.tool):gsub('%%', '%%%%'), (close or ':tabclose'):gsub('%%', '%%%%'))
  local finished = false
  local function drop()
    if api.nvim_buf_is_valid(buf) then
      vim.bo[buf].modified = false -- what was typed is either sent or given up
    end
    close_tab(tab)
  end
  local function finish(value)
    if not finished then
      finished = true
      drop()
      on_done(value)
    end
  end
  questions.on_close(q, function() -- the question ended elsewhere: nothing to answer
    finished = true
    drop()
  end)
  api.nvim_create_autocmd('BufWriteCmd', {
    buffer = buf,
    callback = function()
      local value, problem = M.parse(api.nvim_buf_get_lines(buf, 0, -1, false))
      if not value then
        return vim.notify('turnstoned: ' .. problem, vim.log.levels.ERROR)
      end
      vim.bo[buf].modified = false
      vim.schedule(function() -- not while the write is under way
        finish(value)
      end)
    end,
  })
  api.nvim_create_autocmd('BufWipeout', { buffer = buf, callback = function()
    vim.schedule(function()
      finish(nil)
    end)
  end })
  if close then
    vim.keymap.set('n', close, function()
      finish(nil)
    end, { buffer = buf, nowait = true, desc = 'turnstoned: back to the approval choices' })
  end
end

--- Ask for new arguments of a call; `on_done(args)` with the edited object, or nil when
--- the user left them as they were.
---@param q turnstoned.Question
---@param item turnstoned.ApprovalRequestItem
---@param arguments string the call's arguments as JSON
---@param on_done fun(args?: table)
function M.ask(q, item, arguments, on_done)
  local args = M.parse({ arguments }) or {}
  local command = args.command
  if item.tool == 'bash' and type(command) == 'string' and not command:find('\n', 1, true) then
    return questions.input(q, { prompt = 'Run instead: ', default = command }, function(text)
      if not text or vim.trim(text) == '' or text == command then
        return on_done(nil)
      end
      args.command = text
      on_done(args)
    end)
  end
  edit_json(q, item, args, on_done)
end

return M
