--- Approving tool calls: the choices for one approval cycle, all its calls at once or one
--- by one, with how risky each looks (the daemon's rules, the LLM judge), what "Always"
--- would save, a diff review for file changes and editing a call before it runs.
local client = require('turnstoned.client')
local log = require('turnstoned.log')
local P = require('turnstoned.protocol')
local questions = require('turnstoned.questions')
local verdicts = require('turnstoned.verdicts')

local methods = P.methods
local M = {}

---@class turnstoned.ApprovalPrompt : turnstoned.Question
---@field params turnstoned.ApprovalRequestParams
---@field decided table<string, turnstoned.CallDecision>  calls decided one by one
---@field judge table<string, turnstoned.Verdict>  the judge's verdicts, once they arrived
---@field judged? boolean      `approval/verdicts` came
---@field shown? turnstoned.ApprovalRequestItem[]  the calls the question shows now
---@field redraw? fun(lines: string[])  redraws its details window

---@type table<string, turnstoned.ApprovalPrompt>  open cycles by id
local cycles = {}
---@type table<string, {sid: string, arguments: string}>  calls' arguments by call id
local call_arguments = {}

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

--- The `path` argument the model gave a call (the daemon's FileChange path is resolved).
---@param call_id string
---@return string?
local function path_argument(call_id)
  local known = call_arguments[call_id]
  local ok, args = pcall(vim.json.decode, known and known.arguments or '')
  return ok and type(args) == 'table' and type(args.path) == 'string' and args.path or nil
end

---@param req turnstoned.ApprovalPrompt
---@param call_id string
---@param next_step fun()
local function review(req, call_id, next_step)
  require('turnstoned.review').open(req, call_id, function(decision, feedback, edited)
    if not decision then
      return next_step()
    elseif decision == 'approve' and edited then
      -- The proposal as the user left it is what gets written: the call, edited.
      req.decided[call_id] = { decision = 'approve',
        arguments = { path = path_argument(call_id) or edited.path, content = edited.content } }
      if #undecided(req) == 0 then
        return answer(req, 'approve')
      end
      return next_step()
    end
    decide(req, call_id, decision, feedback, next_step)
  end)
end

--- The "Always" choice: the exact rules it saves; none when it would save nothing.
---@param items turnstoned.ApprovalRequestItem[]
---@param all string
---@return {id: string, label: string}?
local function always(items, all)
  local rules, none = verdicts.grant_rules(items)
  if #rules == 0 then
    return nil
  end
  local label = ('Always%s (allow %s for this session)'):format(all, table.concat(rules, ', '))
  if none > 0 then
    label = label .. (none == 1 and '; 1 call still asks each time' or ('; %d calls still ask each time'):format(none))
  end
  return { id = 'always', label = label }
end

--- Whether the user can edit this call's arguments (one call asked about, a daemon that
--- takes edited arguments, and the arguments known).
---@param items turnstoned.ApprovalRequestItem[]
---@return boolean
local function editable(items)
  return #items == 1 and call_arguments[items[1].callId] ~= nil and client.has_revision('1.5')
end

--- Whether the question is the model's plan (plan mode's propose_plan).
---@param items turnstoned.ApprovalRequestItem[]
---@return boolean
local function is_plan(items)
  return #items == 1 and items[1].tool == 'propose_plan'
end

---@param items turnstoned.ApprovalRequestItem[]
---@param more boolean other calls were decided already
---@param each boolean offer to decide the calls one by one
---@return {id: string, label: string}[]
local function choices(items, more, each)
  if is_plan(items) then
    return {
      { id = 'approve', label = 'Approve the plan (the session switches to auto and carries it out)' },
      { id = 'deny', label = 'Ask for another plan (say what to change)…' },
    }
  end
  local n = #items
  local all = n == 1 and '' or (more and (' the other %d'):format(n) or (' all %d'):format(n))
  local out = { { id = 'approve', label = 'Approve' .. all } }
  out[#out + 1] = always(items, all)
  out[#out + 1] = { id = 'deny', label = 'Deny' .. all .. '…' }
  if each and n > 1 then
    out[#out + 1] = { id = 'each', label = 'Decide each call…' }
  end
  for _, item in ipairs(items) do
    if M.reviewable(item) then
      out[#out + 1] = { id = 'review:' .. item.callId, label = 'Review diff: ' .. item.header }
    end
  end
  if editable(items) then
    local what = items[1].tool == 'bash' and 'the command' or 'the arguments (JSON)'
    out[#out + 1] = { id = 'edit', label = ('Edit %s, then run it…'):format(what) }
  end
  return out
end

--- Run the one call of `items` with arguments the user edits; `back()` when they did not.
---@param req turnstoned.ApprovalPrompt
---@param item turnstoned.ApprovalRequestItem
---@param back fun()
---@param next_step fun()
local function edit(req, item, back, next_step)
  require('turnstoned.edit').ask(req, item, call_arguments[item.callId].arguments, function(args)
    if not args then
      return back()
    end
    req.decided[item.callId] = { decision = 'approve', arguments = args }
    if #undecided(req) == 0 then
      return answer(req, 'approve')
    end
    next_step()
  end)
end

--- Show the calls' verdicts and what Always saves, in a window kept while the question is.
---@param req turnstoned.ApprovalPrompt
---@param items turnstoned.ApprovalRequestItem[]
local function show_details(req, items)
  req.shown = items
  local rated = vim.iter(items):any(function(item)
    return item.verdict ~= nil or item.escalation ~= nil or item.tool == 'propose_plan'
  end)
  if not rated then
    return
  end
  local lines = verdicts.details(items, req.judge, req.params.judgePending == true and not req.judged)
  if req.redraw then
    req.redraw(lines)
  else
    req.redraw = verdicts.window(req, lines)
  end
end

--- What the question says: the calls, and which session asks when it is not open here
--- (a coordinator's child session).
---@param req turnstoned.ApprovalPrompt
---@param items turnstoned.ApprovalRequestItem[]
---@return string
local function title(req, items)
  local heads = vim.tbl_map(function(item)
    local head = item.header .. verdicts.badge(item.sandbox) .. verdicts.tag(item.verdict)
    if type(item.escalation) == 'string' then
      head = head .. ' — leaves the sandbox: ' .. item.escalation:gsub('\n', ' ')
    end
    return head
  end, items)
  local text = #items == 1 and heads[1] or ('%d calls: %s'):format(#items, table.concat(heads, ' | '))
  if is_plan(items) then
    text = 'Approve this plan? ' .. items[1].header
  end
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
  show_details(req, items)
  questions.select(req, title(req, items), list, function(id)
    if id == nil then -- dismissed: nothing runs unasked
      return answer(req, 'deny')
    elseif id == 'each' then
      return run(req, items[1])
    elseif id == 'edit' then
      return edit(req, items[1], function()
        run(req, item)
      end, next_step)
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
  cycles[params.cycleId] = {
    key = params.cycleId,
    params = params,
    respond = function(result)
      cycles[params.cycleId] = nil
      respond(result)
    end,
    fallback = { decision = 'deny' }, -- nothing runs unasked
    decided = {},
    judge = {},
    ask = function(q)
      run(q)
    end,
  }
  questions.push(cycles[params.cycleId])
end

--- The judge's verdicts for a cycle asked with `judgePending`: shown if it is still open.
---@param params turnstoned.ApprovalVerdicts
function M.verdicts(params)
  local req = cycles[params.cycleId]
  if not req then
    return
  end
  req.judge = vim.tbl_extend('force', req.judge, params.verdicts or {})
  req.judged = true
  if req.shown and not req.done then
    show_details(req, req.shown)
  end
end

--- A tool call began: keep its arguments, in case its approval is edited.
---@param params turnstoned.ItemStarted
local function item_started(params)
  local item = params.item
  if item.type == 'toolCall' and item.needsApproval and item.arguments then
    call_arguments[item.callId] = { sid = params.sessionId, arguments = item.arguments }
  end
end

--- A turn ended: its calls' arguments are no longer needed.
---@param params turnstoned.TurnCompleted
local function turn_completed(params)
  for id, entry in pairs(call_arguments) do
    if entry.sid == params.sessionId then
      call_arguments[id] = nil
    end
  end
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
  client.on(methods.approval_verdicts, M.verdicts)
  client.on(methods.item_started, item_started)
  client.on(methods.turn_completed, turn_completed)
end

return M
