--- `workspace/filesChanged`: buffers follow what the agent wrote.
---
--- After each batch of tool calls that changed something the daemon names the files its
--- tools wrote (`fromBuffer`: the change was made to the unsaved text of the buffer, so
--- reloading it loses nothing) and whether a command ran. A buffer without unsaved changes
--- is reloaded, and so is a `fromBuffer` one (unless it was typed in after the daemon read
--- it); a buffer with unsaved changes of its own is kept, with a warning. After a command,
--- every loaded buffer is checked against its file the same way.
---
--- The check is `:checktime`, answered by a `FileChangedShell` autocommand that exists only
--- while it runs: Neovim never stops to ask (nothing blocks, with or without a UI), and the
--- user's own handling of files changed outside Neovim is left as it is the rest of the time.
local editor = require('turnstoned.editor')

local api = vim.api
local M = {}

---@alias turnstoned.ReloadPlan 'reload'|'keep'|'auto'

--- What the running check does with each buffer; nil when no check runs.
---@type table<integer, turnstoned.ReloadPlan>?
local plan
---@type {buf: integer, reason: string}[]
local kept = {}

local function on_changed(args)
  local buf = args.buf
  local what = plan and plan[buf]
  if not what then
    return -- not ours to answer: as if nothing was changed (the next check asks again)
  end
  local reason = vim.v.fcs_reason
  if reason == 'deleted' then
    kept[#kept + 1] = { buf = buf, reason = 'deleted' }
    vim.v.fcs_choice = ''
  elseif reason == 'time' then
    vim.v.fcs_choice = ''
  elseif what == 'reload' or (what == 'auto' and reason ~= 'conflict') then
    vim.v.fcs_choice = 'reload'
  else
    kept[#kept + 1] = { buf = buf, reason = 'conflict' }
    vim.v.fcs_choice = ''
  end
end

---@param bufs integer[]
---@return {win: integer, view: table}[]
local function save_views(bufs)
  local set = {}
  for _, b in ipairs(bufs) do
    set[b] = true
  end
  local views = {}
  for _, win in ipairs(api.nvim_list_wins()) do
    if set[api.nvim_win_get_buf(win)] then
      views[#views + 1] = { win = win, buf = api.nvim_win_get_buf(win), view = api.nvim_win_call(win, vim.fn.winsaveview) }
    end
  end
  return views
end

---@param views {win: integer, buf: integer, view: table}[]
local function restore_views(views)
  for _, v in ipairs(views) do
    if api.nvim_win_is_valid(v.win) and api.nvim_win_get_buf(v.win) == v.buf then
      api.nvim_win_call(v.win, function()
        vim.fn.winrestview(v.view)
      end)
    end
  end
end

--- Check buffers against their files: `targets` maps each buffer to what to do when its
--- file changed. Returns the buffers kept (changed on disk, unsaved changes here).
---@param targets table<integer, turnstoned.ReloadPlan>
---@return {buf: integer, reason: string}[]
function M.check(targets)
  local bufs = vim.tbl_keys(targets)
  if #bufs == 0 then
    return {}
  end
  local views = save_views(bufs)
  plan, kept = targets, {}
  local group = api.nvim_create_augroup('turnstoned.reload', { clear = true })
  api.nvim_create_autocmd('FileChangedShell', { group = group, callback = on_changed })
  for _, buf in ipairs(bufs) do
    if api.nvim_buf_is_loaded(buf) then
      local ok, err = pcall(vim.cmd.checktime, buf)
      if not ok then
        require('turnstoned.log').warn('checking buffer %d against its file: %s', buf, err)
      end
    end
  end
  api.nvim_del_augroup_by_id(group)
  local out = kept
  plan, kept = nil, {}
  restore_views(views)
  return out
end

---@param sid string
---@param path string
---@return string
local function shown(sid, path)
  local chat = require('turnstoned.session').get(sid)
  return chat and chat:relative(path) or vim.fn.fnamemodify(path, ':~:.')
end

--- The daemon's `workspace/filesChanged`.
---@param p turnstoned.WorkspaceFilesChanged
function M.files_changed(p)
  local targets = {}
  for _, f in ipairs(p.files or {}) do
    local buf = type(f.path) == 'string' and editor.find_buf(f.path)
    if buf then
      local path = editor.path(buf)
      local untouched = f.fromBuffer and editor.served_tick(path) == api.nvim_buf_get_changedtick(buf)
      targets[buf] = (not vim.bo[buf].modified or untouched) and 'reload' or 'keep'
    end
  end
  if p.commands then
    for _, buf in ipairs(api.nvim_list_bufs()) do
      if targets[buf] == nil and api.nvim_buf_is_loaded(buf) and editor.path(buf) then
        targets[buf] = 'auto'
      end
    end
  end
  local left = M.check(targets)
  if #left == 0 then
    return
  end
  local conflicts, deleted = {}, {}
  for _, k in ipairs(left) do
    local name = shown(p.sessionId, editor.path(k.buf) or api.nvim_buf_get_name(k.buf))
    table.insert(k.reason == 'deleted' and deleted or conflicts, name)
  end
  if #conflicts > 0 then
    vim.notify(('turnstoned: the agent changed %s on disk while %s unsaved changes here: kept as you '
      .. 'have it (:edit! loads the new file, :w keeps yours)'):format(table.concat(conflicts, ', '),
      #conflicts == 1 and 'its buffer has' or 'their buffers have'), vim.log.levels.WARN)
  end
  if #deleted > 0 then
    vim.notify(('turnstoned: %s deleted on disk; the buffer is kept'):format(table.concat(deleted, ', ')
      .. (#deleted == 1 and ' was' or ' were')), vim.log.levels.WARN)
  end
end

--- Follow the daemon's notices of changed files (called once, when the plugin is first used).
function M.wire()
  local methods = require('turnstoned.protocol').methods
  require('turnstoned.client').on(methods.workspace_files_changed, function(p)
    M.files_changed(p)
  end)
end

return M
