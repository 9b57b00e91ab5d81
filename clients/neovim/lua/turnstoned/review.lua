--- The review tab: a proposed file change against the file as it is, in Neovim's diff mode,
--- with keymaps to approve or deny the call from there.
local client = require('turnstoned.client')
local config = require('turnstoned.config')
local P = require('turnstoned.protocol')
local questions = require('turnstoned.questions')

local api = vim.api
local M = {}

---@param name string
---@param text string
---@param path string
---@return integer
local function scratch(name, text, path)
  local buf = api.nvim_create_buf(false, true)
  pcall(api.nvim_buf_set_name, buf, name)
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].swapfile = false
  local lines = vim.split(text, '\n', { plain = true })
  if lines[#lines] == '' then
    table.remove(lines)
  end
  api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
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
---@param on_key fun(action: 'approve'|'deny'|'back')
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
    map(keys.diff_approve, 'approve', 'turnstoned: approve this change')
    map(keys.diff_deny, 'deny', 'turnstoned: deny this change')
    map(keys.close, 'back', 'turnstoned: back to the approval choices')
  end
end

---@param change {path: string, oldText?: string, newText?: string}
---@return integer tab, integer[] bufs
local function open_tab(change)
  local path = change.path
  local shown = vim.fn.fnamemodify(path, ':~:.')
  local old = scratch('turnstoned://current/' .. shown, change.oldText or '', path)
  local new = scratch('turnstoned://proposed/' .. shown, change.newText or '', path)
  vim.cmd.tabnew()
  local tab = api.nvim_get_current_tabpage()
  local left = api.nvim_get_current_win()
  local empty = api.nvim_get_current_buf()
  api.nvim_win_set_buf(left, old)
  pcall(api.nvim_buf_delete, empty, { force = true })
  local right = api.nvim_open_win(new, true, { split = 'right', win = left })
  local keys = config.get().keymaps
  local hint = ('%s approve · %s deny · %s back'):format(keys.diff_approve or '-',
    keys.diff_deny or '-', keys.close or '-')
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

--- Open the review tab for one call of an approval prompt. `done(decision, feedback)` gets
--- 'approve' or 'deny', or nil when the user went back to the choices.
---@param req turnstoned.ApprovalPrompt
---@param call_id string
---@param done fun(decision?: string, feedback?: string)
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
      if action == 'deny' then
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
