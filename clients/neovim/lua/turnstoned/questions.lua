--- The daemon's questions (approvals, trust in a project config), asked one at a time
--- through `vim.ui.select` and `vim.ui.input` so a picker plugin shows them.
---
--- A question the daemon ends before it is answered (an interrupt, a timeout, the session
--- closed) closes whatever it had open: the windows its picker opened, and what it added
--- itself (a review tab, a preview window).
local log = require('turnstoned.log')

local api = vim.api
local M = {}

---@class turnstoned.Question
---@field key string                 what the daemon names it by (an approval's cycle id)
---@field ask fun(q: turnstoned.Question)  shows its first prompt
---@field respond fun(result: table)
---@field fallback table             the answer when it is dismissed, fails or is withdrawn
---@field done? boolean
---@field wins? integer[]            windows its pickers opened
---@field cleanups? fun()[]          closes what it opened itself
---@field stop_watching? fun()[]

---@type turnstoned.Question[]
local queue = {}
---@type turnstoned.Question?
local active
local group = api.nvim_create_augroup('turnstoned.questions', { clear = true })

---@param q turnstoned.Question
local function close_ui(q)
  for _, stop in ipairs(q.stop_watching) do
    stop()
  end
  if vim.tbl_contains(q.wins, api.nvim_get_current_win()) and api.nvim_get_mode().mode:match('^i') then
    vim.cmd.stopinsert() -- the picker's prompt had the cursor
  end
  for _, win in ipairs(q.wins) do
    if api.nvim_win_is_valid(win) then
      pcall(api.nvim_win_close, win, true)
    end
  end
  for _, fn in ipairs(q.cleanups) do
    pcall(fn)
  end
  q.wins, q.cleanups = {}, {}
end

local pump

--- Answer a question (once; later answers are dropped) and show the next one.
---@param q turnstoned.Question
---@param response table
function M.finish(q, response)
  if q.done then
    return
  end
  q.done = true
  close_ui(q)
  q.respond(response)
  if active == q then
    active = nil
  end
  vim.schedule(pump)
end

pump = function()
  if active or #queue == 0 then
    return
  end
  active = table.remove(queue, 1)
  local ok, err = pcall(active.ask, active)
  if not ok then -- a picker that failed must not leave the daemon waiting
    log.error('a question failed: %s', err)
    vim.notify('turnstoned: the question failed and was answered no: ' .. tostring(err),
      vim.log.levels.ERROR)
    M.finish(active, active.fallback)
  end
end

--- Ask `q` when the questions before it are answered.
---@param q turnstoned.Question
function M.push(q)
  q.done, q.wins, q.cleanups, q.stop_watching = false, {}, {}, {}
  table.insert(queue, q)
  pump()
end

--- Run `fn` when `q` ends, however it ends (to close a tab or window it opened).
---@param q turnstoned.Question
---@param fn fun()
function M.on_close(q, fn)
  table.insert(q.cleanups, fn)
end

--- The daemon ended the question named `key`: answer it with its fallback (the daemon
--- ignores that answer) and close what it has open. Returns whether it was being shown.
---@param key string
---@return boolean shown
function M.withdraw(key)
  for i, q in ipairs(queue) do
    if q.key == key then
      table.remove(queue, i)
      M.finish(q, q.fallback)
      return false
    end
  end
  local q = active
  if q and not q.done and q.key == key then
    M.finish(q, q.fallback)
    return true
  end
  return false
end

--- Forget every question (the daemon is gone; nobody waits for the answers).
function M.clear()
  for _, q in ipairs(queue) do
    q.done = true
  end
  queue = {}
  if active then
    active.done = true
    close_ui(active)
    active = nil
  end
end

--- How many questions are open or waiting.
---@return integer
function M.pending()
  return #queue + (active and 1 or 0)
end

--- Run a `vim.ui` call for `q`, remembering the windows it opens (at once or in the next
--- tick: a picker's, not the ones the user opens later); `on_answer` is dropped once the
--- question is over.
---@param q turnstoned.Question
---@param call fun(on_answer: fun(...))
---@param on_answer fun(...)
local function watch(q, call, on_answer)
  local id = api.nvim_create_autocmd('WinNew', {
    group = group,
    callback = function()
      table.insert(q.wins, api.nvim_get_current_win())
    end,
  })
  local function stop()
    pcall(api.nvim_del_autocmd, id)
  end
  table.insert(q.stop_watching, stop)
  call(function(...)
    stop()
    if not q.done then
      on_answer(...)
    end
  end)
  vim.schedule(stop)
end

--- `vim.ui.select` over `{id, label}` choices; `on_choice(id)` (nil when dismissed).
---@param q turnstoned.Question
---@param prompt string
---@param choices {id: string, label: string}[]
---@param on_choice fun(id?: string)
function M.select(q, prompt, choices, on_choice)
  watch(q, function(answer)
    vim.ui.select(choices, {
      prompt = prompt,
      kind = 'turnstoned',
      format_item = function(c)
        return c.label
      end,
    }, answer)
  end, function(choice)
    on_choice(choice and choice.id)
  end)
end

--- `vim.ui.input` for `q`; `on_text(text)` (nil when cancelled).
---@param q turnstoned.Question
---@param opts table vim.ui.input options (prompt, default)
---@param on_text fun(text?: string)
function M.input(q, opts, on_text)
  watch(q, function(answer)
    vim.ui.input(opts, answer)
  end, on_text)
end

--- Ask for the reason the model reads with a denial (nil when empty).
---@param q turnstoned.Question
---@param on_reason fun(reason?: string)
function M.reason(q, on_reason)
  M.input(q, { prompt = 'Reason for the model (optional): ' }, function(text)
    on_reason((text and text ~= '') and text or nil)
  end)
end

return M
