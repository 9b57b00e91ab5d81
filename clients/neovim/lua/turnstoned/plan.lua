--- The model's live plan (`plan/updated`, from its `update_plan` tool): a checklist at the
--- top of the turn it belongs to, rewritten in place each time the model updates it.
local tb = require('turnstoned.textbuf')

local api = vim.api
local M = {}

local MARK = { done = '[x]', in_progress = '[>]', pending = '[ ]' }

--- The checklist's lines: a header with the count done, the explanation, one line a step.
---@param steps turnstoned.PlanStep[]
---@param explanation? string
---@return string[]
function M.lines(steps, explanation)
  local done = 0
  for _, s in ipairs(steps) do
    done = done + (s.status == 'done' and 1 or 0)
  end
  local out = { ('📋 Plan · %d of %d done'):format(done, #steps) }
  if type(explanation) == 'string' and explanation ~= '' then
    out[#out + 1] = '  ' .. explanation:gsub('%s+', ' ')
  end
  for _, s in ipairs(steps) do
    out[#out + 1] = ('- %s %s'):format(MARK[s.status] or MARK.pending, (tostring(s.step):gsub('\n', ' ')))
  end
  return out
end

--- Mark where the turn starting now begins (its plan goes under this line): the end of the
--- transcript, which is the end of the prompt that started it.
---@param chat turnstoned.Chat
---@param turn_id? string
function M.turn_started(chat, turn_id)
  local last = api.nvim_buf_line_count(chat.buf) - 1
  chat.plan_anchor = { turn = turn_id, mark = tb.mark(chat.buf, last, 0, false) }
end

--- Show a plan for turn `turn_id`: rewrite the turn's checklist, or place a new one at the
--- top of the turn (under its prompt).
---@param chat turnstoned.Chat
---@param turn_id? string
---@param steps turnstoned.PlanStep[]
---@param explanation? string
function M.show(chat, turn_id, steps, explanation)
  local lines = M.lines(steps or {}, explanation)
  local shown = chat.plan
  chat:edit(function()
    if shown and shown.turn == turn_id and tb.range(chat.buf, shown.block) then
      return chat:replace(shown.block, lines)
    end
    local anchor = chat.plan_anchor
    local row = anchor and (tb.pos(chat.buf, anchor.mark)) or (api.nvim_buf_line_count(chat.buf) - 1)
    local first = row + 2 -- a blank line between the prompt and the checklist
    local block = tb.block(chat.buf, first, first + #lines - 1, false, nil, function()
      local after = api.nvim_buf_get_lines(chat.buf, row + 1, row + 2, false)[1]
      local body = vim.list_extend({ '' }, lines)
      if after ~= nil and after ~= '' then
        body[#body + 1] = '' -- and one before what follows
      end
      api.nvim_buf_set_lines(chat.buf, row + 1, row + 1, false, body)
    end)
    chat.plan = { turn = turn_id, block = block }
  end)
end

--- A resumed (or redrawn) session's last plan: at the top of its last turn, `turn_id`.
---@param chat turnstoned.Chat
---@param steps? turnstoned.PlanStep[]
---@param turn_id? string
function M.resumed(chat, steps, turn_id)
  chat.plan = nil
  local mark = chat.prompt_end
  chat.plan_anchor = mark and { turn = turn_id, mark = mark } or nil
  if type(steps) == 'table' and #steps > 0 then
    M.show(chat, turn_id, steps)
  end
end

return M
