--- The review tab: a proposed file change against the file as it is, in Neovim's diff mode,
--- with keymaps to approve or deny the call from there. The proposal is editable: `do`,
--- `dp`, the drop key (a hunk back to the file as it is) and plain editing change what is
--- written; approving an edited proposal writes exactly that text.
local client = require('turnstoned.client')
local config = require('turnstoned.config')
local P = require('turnstoned.protocol')
local questions = require('turnstoned.questions')

local api = vim.api
local M = {}

---@param text string
---@return string[]
local function lines_of(text)
  local lines = vim.split(text, '\n', { plain = true })
  if lines[#lines] == '' then
    table.remove(lines)
  end
  return lines
end

--- A buffer's lines as file text: a final newline when `like` (the proposal) has one.
---@param lines string[]
---@param like string
---@return string
function M.text_of(lines, like)
  local text = table.concat(lines, '\n')
  if #lines > 0 and (like == '' or like:sub(-1) == '\n') then
    text = text .. '\n'
  end
  return text
end

--- The hunk of a diff of `old` (lines) against `new` (lines) at `row` (1-based) of one side:
--- `{start_old, count_old, start_new, count_new}` as `vim.diff` gives them, or nil.
---@param old string[]
---@param new string[]
---@param row integer
---@param side 'old'|'new'
---@return integer[]?
function M.hunk_at(old, new, row, side)
  local a = table.concat(old, '\n') .. '\n'
  local b = table.concat(new, '\n') .. '\n'
  local hunks = vim.diff(#old == 0 and '' or a, #new == 0 and '' or b, { result_type = 'indices' })
  ---@cast hunks integer[][]
  for _, h in ipairs(hunks) do
    local start, count = h[1], h[2]
    if side == 'new' then
      start, count = h[3], h[4]
    end
    -- A hunk with no lines on this side sits between two lines: either one takes it.
    local first, last = start, start + count - 1
    if count == 0 then
      first, last = start, start + 1
    end
    if row >= first and row <= last then
      return h
    end
  end
end

--- Put the hunk under the cursor of the proposal back to the file as it is.
---@param old_buf integer
---@param new_buf integer
---@return boolean dropped
function M.drop_hunk(old_buf, new_buf)
  local buf = api.nvim_get_current_buf()
  local row = api.nvim_win_get_cursor(0)[1]
  local old = api.nvim_buf_get_lines(old_buf, 0, -1, false)
  local new = api.nvim_buf_get_lines(new_buf, 0, -1, false)
  local h = M.hunk_at(old, new, row, buf == old_buf and 'old' or 'new')
  if not h then
    vim.notify('turnstoned: no change of the proposal here', vim.log.levels.INFO)
    return false
  end
  local from = h[4] == 0 and h[3] or h[3] - 1 -- 0-based row where the proposal's lines start
  local back = { unpack(old, h[1], h[1] + h[2] - 1) }
  if h[2] == 0 then
    back = {}
  end
  api.nvim_buf_set_lines(new_buf, from, from + h[4], false, back)
  pcall(vim.cmd.diffupdate)
  return true
end

---@param name string
---@param text string
---@param path string
---@param editable? boolean
---@return integer
local function scratch(name, text, path, editable)
  local buf = api.nvim_create_buf(false, true)
  pcall(api.nvim_buf_set_name, buf, name)
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].swapfile = false
  api.nvim_buf_set_lines(buf, 0, -1, false, lines_of(text))
  vim.bo[buf].modifiable = editable == true
  vim.bo[buf].modified = false
  local ft = vim.filetype.match({ filename = path, buf = buf })
  if ft then
    vim.bo[buf].filetype = ft
  end
  return buf
end

--- Close a review tab.
---@param tab integer
function M.close(tab)
  if not api.nvim_tabpage_is_valid(tab) then
    return
  end
  if #api.nvim_list_tabpages() > 1 then
    local nr = api.nvim_tabpage_get_number(tab)
    vim.cmd.tabclose(nr)
  else
    for _, win in ipairs(api.nvim_tabpage_list_wins(tab)) do
      pcall(api.nvim_win_close, win, true)
    end
  end
end

---@param bufs integer[]
---@param on_key fun(action: 'approve'|'deny'|'back'|'drop')
local function keymaps(bufs, on_key)
  local keys = config.get().keymaps
  for _, buf in ipairs(bufs) do
    local function map(lhs, action, desc)
      if lhs then
        vim.keymap.set('n', lhs, function()
          on_key(action)
        end, { buffer = buf, nowait = true, desc = desc })
      end
    end
    map(keys.diff_approve, 'approve', 'turnstoned: approve this change (as the proposal now reads)')
    map(keys.diff_deny, 'deny', 'turnstoned: deny this change')
    map(keys.close, 'back', 'turnstoned: back to the approval choices')
    map(keys.diff_drop, 'drop', 'turnstoned: drop the hunk under the cursor from the proposal')
  end
end

---@param change {path: string, oldText?: string, newText?: string}
---@return integer tab, integer[] bufs
local function open_tab(change)
  local path = change.path
  local shown = vim.fn.fnamemodify(path, ':~:.')
  local old = scratch('turnstoned://current/' .. shown, change.oldText or '', path)
  local new = scratch('turnstoned://proposed/' .. shown, change.newText or '', path, true)
  vim.cmd.tabnew()
  local tab = api.nvim_get_current_tabpage()
  local left = api.nvim_get_current_win()
  local empty = api.nvim_get_current_buf()
  api.nvim_win_set_buf(left, old)
  pcall(api.nvim_buf_delete, empty, { force = true })
  local right = api.nvim_open_win(new, true, { split = 'right', win = left })
  local keys = config.get().keymaps
  local hint = ('%s drop hunk · %s approve · %s deny · %s back'):format(
    keys.diff_drop or '-', keys.diff_approve or '-', keys.diff_deny or '-', keys.close or '-')
  local escaped = shown:gsub('%%', '%%%%')
  vim.wo[left][0].winbar = (' current: %s'):format(escaped)
  vim.wo[right][0].winbar = (' %%<proposed: %s%%=%s '):format(escaped, hint)
  for _, win in ipairs({ left, right }) do
    api.nvim_win_call(win, function()
      vim.cmd.diffthis()
    end)
  end
  return tab, { old, new }
end

--- Open the review tab for one call of an approval prompt. `done(decision, feedback,
--- edited)` gets 'approve' or 'deny', or nil when the user went back to the choices;
--- `edited` is `{path, content}` when the proposal was approved as the user changed it.
---@param req turnstoned.ApprovalPrompt
---@param call_id string
---@param done fun(decision?: string, feedback?: string, edited?: {path: string, content: string})
function M.open(req, call_id, done)
  local params = { sessionId = req.params.sessionId, callId = call_id }
  client.request(P.methods.file_change_read, params, function(err, change)
    if req.done then
      return
    end
    if err or not change then
      vim.notify('turnstoned: cannot read the proposed change: ' .. (err and err.message or '?'),
        vim.log.levels.ERROR)
      return done(nil)
    end
    local tab, bufs = open_tab(change)
    questions.on_close(req, function()
      M.close(tab)
    end)
    keymaps(bufs, function(action)
      if action == 'drop' then
        return M.drop_hunk(bufs[1], bufs[2])
      elseif action == 'approve' then
        local proposed = change.newText or ''
        local content = M.text_of(api.nvim_buf_get_lines(bufs[2], 0, -1, false), proposed)
        M.close(tab)
        return done('approve', nil, content ~= proposed and { path = change.path, content = content } or nil)
      elseif action == 'deny' then
        return questions.reason(req, function(reason)
          M.close(tab)
          done('deny', reason)
        end)
      end
      M.close(tab)
      done(action == 'approve' and 'approve' or nil)
    end)
  end)
end

return M
