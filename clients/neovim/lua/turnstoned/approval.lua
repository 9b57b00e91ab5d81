--- Approving tool calls: the daemon's approval request answered through `vim.ui.select`
--- (and `vim.ui.input` for a reason), one cycle at a time.
---
--- A cycle the daemon withdraws (interrupt, timeout, the session closed) closes whatever
--- prompt it had open: the windows the picker opened, and a review tab.
local client = require('turnstoned.client')
local log = require('turnstoned.log')
local P = require('turnstoned.protocol')

local methods = P.methods
local api = vim.api
local M = {}

---@class turnstoned.ApprovalPrompt
---@field params turnstoned.ApprovalRequestParams
---@field respond fun(result: table)
---@field done boolean
---@field wins integer[]     windows opened while this prompt was asking
---@field tab? integer       the review tab, while open
---@field stop_watching fun()[]  end the window watches of open `vim.ui` calls
---@field decided table<string, {decision: string, feedback?: string}>  calls decided one by one

---@type turnstoned.ApprovalPrompt[]
local queue = {}
---@type turnstoned.ApprovalPrompt?
local active
local group = api.nvim_create_augroup('turnstoned.approval', { clear = true })

---@param req turnstoned.ApprovalPrompt
local function close_ui(req)
  for _, stop in ipairs(req.stop_watching) do
    stop()
  end
  if vim.tbl_contains(req.wins, api.nvim_get_current_win()) and api.nvim_get_mode().mode:match('^i') then
    vim.cmd.stopinsert() -- the picker's prompt had the cursor
  end
  for _, win in ipairs(req.wins) do
    if api.nvim_win_is_valid(win) then
      pcall(api.nvim_win_close, win, true)
    end
  end
  req.wins = {}
  if req.tab and api.nvim_tabpage_is_valid(req.tab) then
    require('turnstoned.review').close(req.tab)
  end
  req.tab = nil
end

local pump

---@param req turnstoned.ApprovalPrompt
---@param response table
local function finish(req, response)
  if req.done then
    return
  end
  req.done = true
  close_ui(req)
  req.respond(response)
  if active == req then
    active = nil
  end
  vim.schedule(pump)
end

--- Run a `vim.ui` call for `req`, remembering the windows it opens (at once or in the next
--- tick: a picker's, not the ones the user opens later); `on_answer` is dropped once the
--- cycle is over.
---@param req turnstoned.ApprovalPrompt
---@param call fun(on_answer: fun(...))
---@param on_answer fun(...)
local function ask(req, call, on_answer)
  local id = api.nvim_create_autocmd('WinNew', {
    group = group,
    callback = function()
      table.insert(req.wins, api.nvim_get_current_win())
    end,
  })
  local function stop()
    pcall(api.nvim_del_autocmd, id)
  end
  table.insert(req.stop_watching, stop)
  call(function(...)
    stop()
    if not req.done then
      on_answer(...)
    end
  end)
  vim.schedule(stop)
end

---@param req turnstoned.ApprovalPrompt
---@param prompt string
---@param choices {id: string, label: string}[]
---@param on_choice fun(id?: string)
function M.select(req, prompt, choices, on_choice)
  ask(req, function(answer)
    vim.ui.select(choices, {
      prompt = prompt,
      kind = 'turnstoned.approval',
      format_item = function(c)
        return c.label
      end,
    }, answer)
  end, function(choice)
    on_choice(choice and choice.id)
  end)
end

--- Ask for the reason the model reads with a denial (empty: none).
---@param req turnstoned.ApprovalPrompt
---@param on_reason fun(reason?: string)
function M.reason(req, on_reason)
  ask(req, function(answer)
    vim.ui.input({ prompt = 'Reason for the model (optional): ' }, answer)
  end, function(text)
    on_reason((text and text ~= '') and text or nil)
  end)
end

---@param items turnstoned.ApprovalRequestItem[]
---@return string
local function labels(items)
  local seen, out = {}, {}
  for _, item in ipairs(items) do
    if not seen[item.approvalLabel] then
      seen[item.approvalLabel] = true
      out[#out + 1] = item.approvalLabel
    end
  end
  return table.concat(out, ', ')
end

--- Whether the daemon can show this call's proposed file content.
---@param item turnstoned.ApprovalRequestItem
---@return boolean
function M.reviewable(item)
  return item.fileChange ~= nil and client.has_revision('1.1')
end

---@param req turnstoned.ApprovalPrompt
---@return boolean
local function splittable(req)
  return not req.params.atomic and client.has_revision('1.1')
end

--- The asked-about calls not decided yet.
---@param req turnstoned.ApprovalPrompt
---@return turnstoned.ApprovalRequestItem[]
local function undecided(req)
  return vim.tbl_filter(function(item)
    return item.needsApproval and not req.decided[item.callId]
  end, req.params.items or {})
end

--- Answer the cycle: `decision` for every call not decided one by one.
---@param req turnstoned.ApprovalPrompt
---@param decision string
---@param feedback? string
local function answer(req, decision, feedback)
  local response = { decision = decision, feedback = feedback }
  if next(req.decided) then
    response.calls = req.decided
  end
  finish(req, response)
end

local run

--- One call got a decision (from its review tab, or when deciding each call).
---@param req turnstoned.ApprovalPrompt
---@param call_id string
---@param decision string
---@param feedback? string
---@param next_step fun()
local function decide(req, call_id, decision, feedback, next_step)
  local rest = undecided(req)
  if not splittable(req) or (#rest == 1 and not next(req.decided)) then
    return answer(req, decision, feedback) -- this call is the cycle, or the cycle cannot split
  end
  req.decided[call_id] = { decision = decision, feedback = feedback }
  next_step()
end

---@param req turnstoned.ApprovalPrompt
---@param call_id string
---@param next_step fun()
local function review(req, call_id, next_step)
  require('turnstoned.review').open(req, call_id, function(decision, feedback)
    if decision then
      decide(req, call_id, decision, feedback, next_step)
    else
      next_step()
    end
  end)
end

---@param items turnstoned.ApprovalRequestItem[]
---@param more boolean other calls were decided already
---@param each boolean offer to decide the calls one by one
---@return {id: string, label: string}[]
local function choices(items, more, each)
  local n = #items
  local all = n == 1 and '' or (more and (' the other %d'):format(n) or (' all %d'):format(n))
  local out = {
    { id = 'approve', label = 'Approve' .. all },
    { id = 'always', label = ('Always%s (allow %s for this session)'):format(all, labels(items)) },
    { id = 'deny', label = 'Deny' .. all .. '…' },
  }
  if each and n > 1 then
    out[#out + 1] = { id = 'each', label = 'Decide each call…' }
  end
  for _, item in ipairs(items) do
    if M.reviewable(item) then
      out[#out + 1] = { id = 'review:' .. item.callId, label = 'Review diff: ' .. item.header }
    end
  end
  return out
end

---@param items turnstoned.ApprovalRequestItem[]
---@return string
local function title(items)
  if #items == 1 then
    return items[1].header
  end
  local heads = vim.tbl_map(function(item)
    return item.header
  end, items)
  return ('%d calls: %s'):format(#items, table.concat(heads, ' | '))
end

--- Ask about one call (while deciding each call), or about every undecided call at once.
---@param req turnstoned.ApprovalPrompt
---@param item? turnstoned.ApprovalRequestItem
run = function(req, item)
  local items = item and { item } or undecided(req)
  if #items == 0 then
    return answer(req, 'deny') -- every call is named in `calls`
  end
  local function next_step()
    run(req, item and undecided(req)[1] or nil)
  end
  local list = choices(items, not item and next(req.decided) ~= nil, not item and splittable(req))
  M.select(req, item and item.header or title(items), list, function(id)
    if id == nil then -- dismissed: nothing runs unasked
      return answer(req, 'deny')
    elseif id == 'each' then
      return run(req, items[1])
    elseif id:match('^review:') then
      return review(req, id:match('^review:(.*)$'), next_step)
    end
    local function decided(reason)
      if item then
        decide(req, item.callId, id, reason, next_step)
      else
        answer(req, id, reason)
      end
    end
    if id == 'deny' then
      return M.reason(req, decided)
    end
    decided(nil)
  end)
end

pump = function()
  if active or #queue == 0 then
    return
  end
  active = table.remove(queue, 1)
  local ok, err = pcall(run, active)
  if not ok then -- a picker that failed must not leave the turn waiting
    log.error('approval prompt failed: %s', err)
    vim.notify('turnstoned: the approval prompt failed, the calls are denied: ' .. tostring(err),
      vim.log.levels.ERROR)
    finish(active, { decision = 'deny' })
  end
end

---@param params turnstoned.ApprovalRequestParams
---@param respond fun(result: table)
function M.request(params, respond)
  local chat = require('turnstoned.session').get(params.sessionId)
  local ids = {}
  for _, item in ipairs(params.items or {}) do
    if item.needsApproval then
      ids[#ids + 1] = item.callId
    end
  end
  if chat then
    chat:calls_status(ids, 'approval')
    chat:working('waiting for your approval')
  end
  table.insert(queue, {
    params = params,
    respond = respond,
    done = false,
    wins = {},
    stop_watching = {},
    decided = {},
  })
  pump()
end

--- The daemon ended a cycle: a prompt still open for it is withdrawn.
---@param params turnstoned.ApprovalResolved
function M.resolved(params)
  for i, req in ipairs(queue) do
    if req.params.cycleId == params.cycleId then
      table.remove(queue, i)
      return finish(req, { decision = 'deny' }) -- never shown; the daemon ignores the answer
    end
  end
  local req = active
  if req and not req.done and req.params.cycleId == params.cycleId then
    log.info('approval %s ended by the daemon: %s', params.cycleId, params.decision)
    if params.decision == 'cancelled' or params.decision == 'timeout' then
      vim.notify(('turnstoned: approval withdrawn (%s)'):format(params.decision), vim.log.levels.INFO)
    end
    finish(req, { decision = 'deny' }) -- the daemon ignores an answer to an ended cycle
  end
end

--- Whether a prompt is open or waiting.
---@return integer
function M.pending()
  return #queue + (active and 1 or 0)
end

--- Answer the daemon's approval requests (called once, on first use).
function M.wire()
  client.on_request(methods.item_tool_request_approval, M.request)
  client.on(methods.approval_resolved, M.resolved)
  client.on_exit(function()
    for _, req in ipairs(queue) do
      req.done = true
    end
    queue = {}
    if active then
      finish(active, { decision = 'deny' })
    end
  end)
end

return M
