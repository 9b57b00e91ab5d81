--- The chat window, the prompt window under it, their keymaps and the winbar.
local config = require('turnstoned.config')
local session = require('turnstoned.session')

local api = vim.api
local M = {}

---@type integer?
local prompt_buf

---@param win? integer
---@return boolean
local function valid(win)
  return win ~= nil and api.nvim_win_is_valid(win)
end

--- The window of the current tabpage showing a chat transcript, if any.
---@return integer?
function M.chat_win()
  for _, win in ipairs(api.nvim_tabpage_list_wins(0)) do
    if vim.b[api.nvim_win_get_buf(win)].turnstoned_chat then
      return win
    end
  end
end

---@return integer?
function M.prompt_win()
  for _, win in ipairs(api.nvim_tabpage_list_wins(0)) do
    if api.nvim_win_get_buf(win) == prompt_buf then
      return win
    end
  end
end

--- Window options of a transcript window.
---@param win integer
function M.decorate(win)
  local wo = vim.wo[win][0]
  wo.wrap, wo.linebreak = true, true
  wo.number, wo.relativenumber, wo.signcolumn = false, false, 'no'
  wo.foldmethod = 'expr'
  wo.foldexpr = "v:lua.require'turnstoned.textbuf'.foldexpr()"
  wo.foldtext = "v:lua.require'turnstoned.textbuf'.foldtext()"
  wo.foldlevel, wo.foldenable = 0, true
  wo.winbar = "%{%v:lua.require'turnstoned.ui'.winbar()%}"
  wo.fillchars = 'fold: ,eob: '
end

local short = require('turnstoned.notices').short

--- What the winbar and the statusline component say about a chat: its state, token
--- usage, approval mode and model ('' when not known yet).
---@param chat? turnstoned.Chat
---@return string state, string usage, string mode, string model
function M.describe(chat)
  if not chat then
    return 'idle', '', session.mode(nil) or '', ''
  end
  local state = chat.running and '⟳ working' or 'idle'
  local usage = {}
  if chat.context and chat.context.window and chat.context.window > 0 then
    usage[#usage + 1] = ('ctx %d%% of %s'):format(
      math.floor(100 * chat.context.tokens / chat.context.window), short(chat.context.window))
  end
  if chat.usage and chat.usage.totalTokens then
    usage[#usage + 1] = ('turn %s tok'):format(short(chat.usage.totalTokens))
  end
  return state, table.concat(usage, ' · '), session.mode(chat) or '', session.model(chat) or ''
end

--- The transcript window's winbar: title, the project instructions the model reads, state
--- and token usage.
---@return string
function M.winbar()
  local win = vim.g.statusline_winid or api.nvim_get_current_win()
  local chat = session.by_buf(api.nvim_win_get_buf(win))
  local title = chat and (chat.title or (chat.sid and chat.sid:sub(1, 12))) or 'new chat'
  local state, usage, mode, model = M.describe(chat)
  local right = usage ~= '' and (chat.running and (state .. ' · ' .. usage) or usage) or state
  if model ~= '' then
    right = ('%s · %s'):format(model, right)
  end
  if mode ~= '' then
    right = ('mode %s · %s'):format(mode, right)
  end
  local function escape(s)
    return (s:gsub('%%', '%%%%'))
  end
  local instructions = chat and chat:instructions_label() or ''
  if instructions ~= '' then
    title = ('%s · instructions: %s'):format(title, instructions)
  end
  -- `%<` truncates the title first when the window is narrow.
  return (' %%<%s%%=%s '):format(escape(title), escape(right))
end

--- Redraw winbars after a state change (only with a UI attached: there is nothing to draw
--- otherwise, and headless Neovim 0.11 can corrupt its message grid on `:redrawstatus!`).
function M.refresh()
  if #api.nvim_list_uis() > 0 then
    vim.cmd('redrawstatus!')
  end
end

api.nvim_create_autocmd('User', {
  group = api.nvim_create_augroup('turnstoned.ui', { clear = true }),
  pattern = 'TurnstonedChanged',
  callback = function()
    M.refresh()
  end,
})

---@param buf integer
---@param lhs string|false
---@param modes string|string[]
---@param fn function
---@param desc string
local function map(buf, lhs, modes, fn, desc)
  if lhs then
    vim.keymap.set(modes, lhs, fn, { buffer = buf, desc = desc, nowait = true })
  end
end

--- What sending the prompt does with its text: `session.send`, until the entry points set
--- the slash commands' handler (which sends anything that is not a built-in).
---@type fun(text: string)
M.on_send = function(text)
  session.send(text)
end

--- Send what the prompt buffer holds, and empty it.
function M.send_prompt()
  local buf = assert(prompt_buf)
  local text = vim.trim(table.concat(api.nvim_buf_get_lines(buf, 0, -1, false), '\n'))
  if text == '' then
    return
  end
  api.nvim_buf_set_lines(buf, 0, -1, false, {})
  M.on_send(text)
end

--- The prompt window's winbar: the pictures attached to the next prompt, and the keys.
---@return string
function M.prompt_winbar()
  local keys = config.get().keymaps
  local function k(lhs)
    return lhs and lhs ~= false and lhs or nil
  end
  local parts = {}
  local send = vim.tbl_filter(function(x)
    return x ~= nil
  end, { k(keys.send), k(keys.send_insert) })
  if #send > 0 then
    parts[#parts + 1] = table.concat(send, ' ') .. ' send'
  end
  if k(keys.interrupt) then
    parts[#parts + 1] = keys.interrupt .. ' stop'
  end
  if k(keys.close) then
    parts[#parts + 1] = keys.close .. ' close'
  end
  local chat = session.peek()
  local attached = require('turnstoned.images').label(chat)
  local left = ' prompt' .. (attached ~= '' and (' · ' .. attached) or '')
  return (('%s%%=%s '):format(left:gsub('%%', '%%%%'), table.concat(parts, ' · '):gsub('%%', '%%%%')))
end

---@param buf integer
local function chat_keymaps(buf)
  local keys = config.get().keymaps
  map(buf, keys.interrupt, 'n', session.interrupt, 'turnstoned: interrupt the turn')
  map(buf, keys.close, 'n', M.close, 'turnstoned: close the chat')
end

---@return integer
local function ensure_prompt_buf()
  if prompt_buf and api.nvim_buf_is_valid(prompt_buf) then
    return prompt_buf
  end
  prompt_buf = api.nvim_create_buf(false, true)
  api.nvim_buf_set_name(prompt_buf, 'turnstoned://prompt')
  vim.bo[prompt_buf].buftype = 'nofile'
  vim.bo[prompt_buf].bufhidden = 'hide'
  vim.bo[prompt_buf].swapfile = false
  vim.bo[prompt_buf].filetype = 'markdown'
  local keys = config.get().keymaps
  map(prompt_buf, keys.send, 'n', M.send_prompt, 'turnstoned: send the prompt')
  map(prompt_buf, keys.send_insert, { 'n', 'i' }, function()
    vim.cmd.stopinsert()
    M.send_prompt()
  end, 'turnstoned: send the prompt')
  chat_keymaps(prompt_buf)
  require('turnstoned.complete').attach(prompt_buf, config.get().auto_complete)
  return prompt_buf
end

---@param cfg turnstoned.Config
---@param buf integer
---@return integer chat window
local function open_layout(cfg, buf)
  local cols, lines = vim.o.columns, vim.o.lines
  if cfg.layout == 'float' then
    local width, height = config.size(cfg.width, cols), config.size(cfg.height, lines)
    return api.nvim_open_win(buf, false, {
      relative = 'editor', width = width, height = height, border = 'rounded',
      row = math.max(0, math.floor((lines - height - cfg.prompt_height - 4) / 2)),
      col = math.floor((cols - width) / 2), title = ' turnstoned ', style = 'minimal',
    })
  elseif cfg.layout == 'tab' then
    vim.cmd.tabnew()
    local win = api.nvim_get_current_win()
    local empty = api.nvim_get_current_buf()
    api.nvim_win_set_buf(win, buf)
    pcall(api.nvim_buf_delete, empty, {})
    return win
  elseif cfg.layout == 'horizontal' then
    return api.nvim_open_win(buf, false, { split = 'below', win = -1, height = config.size(cfg.height, lines) })
  end
  return api.nvim_open_win(buf, false, { split = 'right', win = -1, width = config.size(cfg.width, cols) })
end

---@param cfg turnstoned.Config
---@param chat_win integer
---@return integer
local function open_prompt(cfg, chat_win)
  local buf = ensure_prompt_buf()
  if cfg.layout == 'float' then
    local c = api.nvim_win_get_config(chat_win)
    return api.nvim_open_win(buf, false, {
      relative = 'editor', width = c.width, height = cfg.prompt_height, border = 'rounded',
      row = c.row + c.height + 2, col = c.col, title = ' prompt ', style = 'minimal',
    })
  end
  return api.nvim_open_win(buf, false, { split = 'below', win = chat_win, height = cfg.prompt_height })
end

--- Show a chat in the chat window of this tabpage, opening the layout if needed.
---@param chat turnstoned.Chat
---@param opts? {focus?: boolean, at_end?: boolean}
function M.show(chat, opts)
  opts = opts or {}
  local cfg = config.get()
  local win = M.chat_win()
  if valid(win) then
    api.nvim_win_set_buf(win --[[@as integer]], chat.buf)
  else
    local from = api.nvim_get_current_win()
    win = open_layout(cfg, chat.buf)
    if not opts.focus and cfg.layout ~= 'tab' and valid(from) then
      api.nvim_set_current_win(from)
    end
  end
  ---@cast win integer
  M.decorate(win)
  chat_keymaps(chat.buf)
  local pwin = M.prompt_win()
  if not valid(pwin) then
    pwin = open_prompt(cfg, win)
    vim.wo[pwin][0].winbar = "%{%v:lua.require'turnstoned.ui'.prompt_winbar()%}"
  end
  if opts.at_end then -- the cursor at the end: the window follows what streams in
    api.nvim_win_set_cursor(win, { api.nvim_buf_line_count(chat.buf), 0 })
  end
  if opts.focus then
    api.nvim_set_current_win(pwin)
  end
  M.refresh()
end

--- Put text into the prompt buffer (for a selection the user asks about).
---@param lines string[]
function M.prefill(lines)
  local buf = ensure_prompt_buf()
  api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  local win = M.prompt_win()
  if valid(win) then
    api.nvim_win_set_cursor(win --[[@as integer]], { #lines, 0 })
  end
end

--- Close the chat and prompt windows of this tabpage.
function M.close()
  for _, win in ipairs({ M.prompt_win(), M.chat_win() }) do
    if valid(win) then
      if #api.nvim_tabpage_list_wins(0) == 1 then
        if #api.nvim_list_tabpages() > 1 then
          vim.cmd.tabclose()
        end
      else
        api.nvim_win_close(win, false)
      end
    end
  end
end

return M
