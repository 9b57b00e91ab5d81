--- Session events in a transcript: what the daemon told the model between messages (a
--- background shell exited, a watch fired) and compactions of the model's context. Live
--- (`session/notice`, `session/compacted`) and from a resumed history (`notice` items)
--- they look the same; what the model says next starts under a new heading.
local M = {}

--- A token count as the winbar and the notices say it: 950, 32.8k.
---@param n integer
---@return string
function M.short(n)
  return n >= 1000 and ('%.1fk'):format(n / 1000) or tostring(n)
end

local FENCE = '````'

---@param text? string
---@return string[]
local function lines_of(text)
  return vim.split(text or '', '\n', { plain = true })
end

---@param chat turnstoned.Chat
---@param text string
local function quoted(chat, text)
  chat:note(table.concat(vim.tbl_map(function(line)
    return '> ' .. line
  end, lines_of('ℹ ' .. text)), '\n'))
  chat.answering = false
end

--- A watch fired: its report as the model reads it, folded under what happened.
---@param chat turnstoned.Chat
---@param id string
---@param text string
---@param data? table the live notice's data: name, reason, pollCount, maxPolls
function M.watch(chat, id, text, data)
  local lines = lines_of(text)
  local header = '⏱ ' .. (lines[1] or 'watch'):gsub('^%[', ''):gsub('%]$', '')
  if type(data) == 'table' and data.name then
    header = ('⏱ watch %s: %s (poll %s of %s)'):format(data.name, data.reason or 'fired',
      data.pollCount or '?', data.maxPolls or '?')
  end
  local block = vim.list_extend({ header, FENCE .. 'text' }, lines)
  block[#block + 1] = FENCE
  chat:event_block(id, block)
end

--- The older part of the context left the model's view: a divider, what happened, and
--- the summary the model reads instead, folded.
---@param chat turnstoned.Chat
---@param id string
---@param trigger? string auto, overflow or manual (known live only)
---@param line string what happened (figures, or the daemon's sentence)
---@param summary? string
local function compaction(chat, id, trigger, line, summary)
  local title = 'context compacted' .. (trigger and (' (' .. trigger .. ')') or '')
  chat:note(('──── %s %s\n%s'):format(title, string.rep('─', math.max(4, 56 - #title)), line))
  if type(summary) == 'string' and summary ~= '' then
    chat:event_block(id, vim.list_extend({ '📝 Summary the model reads from here on' }, lines_of(summary)))
  end
  chat.answering = false
end

local compactions = 0

--- A compaction as it happens, with its figures.
---@param chat turnstoned.Chat
---@param p turnstoned.SessionCompacted
function M.compacted(chat, p)
  local short = M.short
  local line = p.text
  if p.mode == 'summary' then
    line = ('%d earlier messages summarised · context %s → %s tokens of %s'):format(p.messages,
      short(p.contextTokensBefore), short(p.contextTokensAfter), short(p.contextWindow))
  end
  local cost = type(p.usage) == 'table' and tonumber(p.usage.totalTokens) or 0
  if cost > 0 then
    line = line .. (' · the summary cost %s tokens'):format(short(cost))
  end
  compactions = compactions + 1
  compaction(chat, 'compacted-live-' .. compactions, p.trigger, line, p.summary)
end

--- A `session/notice` of a session open here.
---@param chat turnstoned.Chat
---@param p turnstoned.SessionNotice
function M.live(chat, p)
  if (p.kind == 'undo' or p.kind == 'redo') and type(p.data) == 'table' then
    local restored = vim.tbl_map(function(path)
      return chat:relative(path)
    end, p.data.restored or {})
    chat:note(('> %s elsewhere: %s'):format(p.kind == 'undo' and '↶ undone' or '↷ redone',
      #restored > 0 and ('restored ' .. table.concat(restored, ', ')) or 'no file needed restoring'))
    chat.answering = false
  elseif p.kind == 'watch' then
    M.watch(chat, 'watch-' .. ((p.data or {}).watchId or tostring(vim.uv.hrtime())), p.text or '', p.data)
  else
    quoted(chat, ((p.text or ''):gsub('\n', ' ')))
  end
end

--- A `notice` item of a session's history.
---@param chat turnstoned.Chat
---@param item turnstoned.NoticeItem
function M.item(chat, item)
  if item.kind == 'compacted' then
    compaction(chat, item.id, nil, item.text, item.detail)
  elseif item.kind == 'watch' then
    M.watch(chat, item.id, item.text)
  else
    quoted(chat, item.text or '')
  end
end

return M
