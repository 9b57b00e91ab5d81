--- Approving tool calls: the choices for one approval cycle, all its calls at once or one
--- by one, with a diff review for file changes.
local client = require('turnstoned.client')
local log = require('turnstoned.log')
local P = require('turnstoned.protocol')
local questions = require('turnstoned.questions')

local methods = P.methods
local M = {}

---@class turnstoned.ApprovalPrompt : turnstoned.Question
---@field params turnstoned.ApprovalRequestParams
---@field decided table<string, {decision: string, feedback?: string}>  calls decided one by one

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
  questions.finish(req, response)
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

--- What the question says: the calls, and which session asks when it is not open here
--- (a coordinator's child session).
---@param req turnstoned.ApprovalPrompt
---@param items turnstoned.ApprovalRequestItem[]
---@return string
local function title(req, items)
  local heads = vim.tbl_map(function(item)
    return item.header
  end, items)
  local text = #items == 1 and heads[1] or ('%d calls: %s'):format(#items, table.concat(heads, ' | '))
  if not require('turnstoned.session').get(req.params.sessionId) then
    text = ('[session %s] %s'):format(req.params.sessionId:sub(1, 8), text)
  end
  return text
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
  questions.select(req, title(req, items), list, function(id)
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
      return questions.reason(req, decided)
    end
    decided(nil)
  end)
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
  questions.push({
    key = params.cycleId,
    params = params,
    respond = respond,
    fallback = { decision = 'deny' }, -- nothing runs unasked
    decided = {},
    ask = function(q)
      run(q)
    end,
  })
end

--- The daemon ended a cycle: a question still open for it is withdrawn.
---@param params turnstoned.ApprovalResolved
function M.resolved(params)
  if questions.withdraw(params.cycleId) then
    log.info('approval %s ended by the daemon: %s', params.cycleId, params.decision)
    if params.decision == 'cancelled' or params.decision == 'timeout' then
      vim.notify(('turnstoned: approval withdrawn (%s)'):format(params.decision), vim.log.levels.INFO)
    end
  end
end

--- Answer the daemon's approval requests (called once, on first use).
function M.wire()
  client.on_request(methods.item_tool_request_approval, M.request)
  client.on(methods.approval_resolved, M.resolved)
end

return M
