--- How risky a call looks, as the daemon rated it (its rule table) and as the LLM judge
--- did: the words for the approval question, its details window and the tool cards.
local questions = require('turnstoned.questions')

local api = vim.api
local M = {}

--- "high · recursive-delete: deletes a directory tree" (a judge verdict adds its confidence).
---@param v turnstoned.Verdict
---@return string
function M.line(v)
  local how = v.tier == 'llm' and v.confidence and (' (%d%% sure)'):format(math.floor(v.confidence * 100 + 0.5))
    or ''
  local reason = (v.reason or ''):gsub('\n', ' ')
  return ('%s · %s%s: %s'):format(v.risk, v.recommendation, how, reason)
end

--- The short tag after a call's header in the question: "[high: recursive-delete]".
---@param v? turnstoned.Verdict
---@return string
function M.tag(v)
  return v and ('  [%s: %s]'):format(v.risk, v.rule) or ''
end

--- How a command runs, as a badge after its header: "  [sandboxed]" ('' when not said).
---@param sandbox? turnstoned.SandboxUse
---@return string
function M.badge(sandbox)
  return type(sandbox) == 'string' and ('  [%s]'):format(sandbox) or ''
end

--- What a tool card says under its header: the verdicts, an edit, why it ran unasked.
---@param item turnstoned.ToolCallItem
---@param original? string what the model asked for, when the user edited the call
---@return string[]
function M.card(item, original)
  local out = {}
  if original then
    out[#out + 1] = '✎ edited by you; the model asked for: ' .. original:gsub('\n', ' ')
  end
  if item.autoApproved then
    out[#out + 1] = '✓ ran unasked: ' .. (item.autoApproveReason or '')
  end
  if type(item.verdict) == 'table' then
    out[#out + 1] = ('⚖ %s (rule %s)'):format(M.line(item.verdict), item.verdict.rule)
  end
  if type(item.judgeVerdict) == 'table' then
    out[#out + 1] = '⚖ judge: ' .. M.line(item.judgeVerdict)
  end
  return out
end

--- The rules "Always" would save for these calls, and how many calls would save none
--- (they ask every time). A daemon before 1.5 saves each call's approval label.
---@param items turnstoned.ApprovalRequestItem[]
---@return string[] rules, integer none
function M.grant_rules(items)
  local rules, seen, none = {}, {}, 0
  for _, item in ipairs(items) do
    local saved = item.grantRules or { item.approvalLabel }
    none = none + (#saved == 0 and 1 or 0)
    for _, rule in ipairs(saved) do
      if not seen[rule] then
        seen[rule], rules[#rules + 1] = true, rule
      end
    end
  end
  return rules, none
end

--- The details of a question's calls: header, both verdicts, what Always saves, policy.
---@param items turnstoned.ApprovalRequestItem[]
---@param judge table<string, turnstoned.Verdict>  verdicts that arrived after the question
---@param pending boolean the judge has not answered yet
---@return string[]
function M.details(items, judge, pending)
  local out = {}
  for _, item in ipairs(items) do
    if #out > 0 then
      out[#out + 1] = ''
    end
    out[#out + 1] = (item.header or item.tool):gsub('\n', ' ') .. M.badge(item.sandbox)
    if type(item.escalation) == 'string' then
      out[#out + 1] = '  leaves the sandbox: ' .. item.escalation:gsub('\n', ' ')
    end
    if type(item.verdict) == 'table' then
      out[#out + 1] = ('  risk:   %s (rule %s)'):format(M.line(item.verdict), item.verdict.rule)
    end
    local judged = judge[item.callId] or (type(item.judgeVerdict) == 'table' and item.judgeVerdict or nil)
    if judged then
      out[#out + 1] = '  judge:  ' .. M.line(judged)
    elseif pending then
      out[#out + 1] = '  judge:  thinking…'
    end
    if item.grantRules then
      out[#out + 1] = #item.grantRules > 0 and ('  always: saves ' .. table.concat(item.grantRules, ', '))
        or '  always: saves nothing (this call asks every time)'
    end
    if type(item.policy) == 'string' then
      out[#out + 1] = '  policy: ' .. item.policy
    end
    if item.tool == 'propose_plan' and type(item.preview) == 'string' then
      out[#out + 1] = '  the plan (approving it switches the session to auto and carries it out):'
      for _, line in ipairs(vim.split(item.preview, '\n', { plain = true })) do
        out[#out + 1] = '    ' .. line
      end
    end
  end
  return out
end

--- A window at the top of the editor showing `lines` while the question `q` is open (it
--- takes no focus and moves no other window). Returns a function that redraws it.
---@param q turnstoned.Question
---@param lines string[]
---@return fun(lines: string[])
function M.window(q, lines)
  local buf = api.nvim_create_buf(false, true)
  pcall(api.nvim_buf_set_name, buf, 'turnstoned://approval/' .. q.key)
  vim.bo[buf].bufhidden = 'wipe'
  local win
  local function draw(new)
    vim.bo[buf].modifiable = true
    api.nvim_buf_set_lines(buf, 0, -1, false, new)
    vim.bo[buf].modifiable = false
    local width = math.max(20, vim.o.columns - 4)
    local cfg = {
      relative = 'editor', row = 0, col = 1, width = width, style = 'minimal', border = 'rounded',
      height = math.max(1, math.min(#new, math.floor(vim.o.lines / 3))), focusable = false,
      title = ' turnstoned: approval ', zindex = 60,
    }
    if win and api.nvim_win_is_valid(win) then
      api.nvim_win_set_config(win, cfg)
    else
      win = api.nvim_open_win(buf, false, cfg)
      vim.wo[win].wrap = true
    end
  end
  draw(lines)
  if #api.nvim_list_uis() > 0 then
    vim.cmd.redraw() -- before a picker that waits for keys (the built-in one does) hides it
  end
  questions.on_close(q, function()
    if win and api.nvim_win_is_valid(win) then
      api.nvim_win_close(win, true)
    end
  end)
  return function(new)
    if api.nvim_buf_is_valid(buf) then
      draw(new)
    end
  end
end

return M
