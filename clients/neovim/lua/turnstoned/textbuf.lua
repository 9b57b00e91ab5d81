--- Writing into a read-only transcript buffer without moving anyone's cursor, and the
--- blocks (tool calls, reasoning) it folds.
local M = {}

local api = vim.api

M.ns = api.nvim_create_namespace('turnstoned')
M.status_ns = api.nvim_create_namespace('turnstoned.status')

---@class turnstoned.Block
---@field start integer   extmark on the block's first (header) line
---@field stop integer    extmark on the block's last line (right gravity: follows appended text)
---@field fold boolean    the block folds (its header stays visible)
---@field label? fun(): string  what the fold line says after the header
---@field fixed? integer[]  the rows it will span, while an edit moves it

---@type table<integer, turnstoned.Block[]>
local blocks = {}
---@type table<integer, {tick: integer, levels: table<integer, string>}>
local fold_cache = {}

--- Run `fn` with `buf` writable. A window whose cursor sat on the last line follows the
--- new end when `follow` is set; every other cursor and view stays where it was.
---@param buf integer
---@param follow boolean
---@param fn fun()
function M.edit(buf, follow, fn)
  local last = api.nvim_buf_line_count(buf)
  local followers = {}
  if follow then
    for _, win in ipairs(vim.fn.win_findbuf(buf)) do
      if api.nvim_win_get_cursor(win)[1] == last then
        followers[#followers + 1] = win
      end
    end
  end
  vim.bo[buf].modifiable = true
  local ok, err = pcall(fn)
  vim.bo[buf].modifiable = false
  local new_last = api.nvim_buf_line_count(buf)
  for _, win in ipairs(followers) do
    api.nvim_win_set_cursor(win, { new_last, 0 })
  end
  if not ok then
    error(err, 0)
  end
end

--- Append whole lines at the end; a single empty first line is replaced instead.
---@param buf integer
---@param lines string[]
---@return integer row 0-based row of the first appended line
function M.append(buf, lines)
  local count = api.nvim_buf_line_count(buf)
  if count == 1 and api.nvim_buf_get_lines(buf, 0, 1, false)[1] == '' then
    api.nvim_buf_set_lines(buf, 0, 1, false, lines)
    return 0
  end
  api.nvim_buf_set_lines(buf, count, count, false, lines)
  return count
end

--- The row `append_paragraph` would write its first line at.
---@param buf integer
---@return integer
function M.paragraph_row(buf)
  local count = api.nvim_buf_line_count(buf)
  local last = api.nvim_buf_get_lines(buf, count - 1, count, false)[1]
  if count == 1 and last == '' then
    return 0
  end
  return last == '' and count or count + 1
end

--- Append lines, after one blank line unless the buffer is empty or already ends blank.
---@param buf integer
---@param lines string[]
---@return integer row 0-based row of the first of `lines`
function M.append_paragraph(buf, lines)
  local count = api.nvim_buf_line_count(buf)
  local last = api.nvim_buf_get_lines(buf, count - 1, count, false)[1]
  if not (count == 1 and last == '') and last ~= '' then
    M.append(buf, { '' })
  end
  return M.append(buf, lines)
end

---@param buf integer
---@param row integer
---@param col integer
---@param gravity boolean right gravity
---@return integer
function M.mark(buf, row, col, gravity)
  return api.nvim_buf_set_extmark(buf, M.ns, row, col, { right_gravity = gravity })
end

---@param buf integer
---@param id integer
---@return integer row, integer col
function M.pos(buf, id)
  local p = api.nvim_buf_get_extmark_by_id(buf, M.ns, id, {})
  return p[1], p[2]
end

--- Insert `text` (which may hold newlines) at an extmark's position.
---@param buf integer
---@param id integer
---@param text string
function M.insert_at(buf, id, text)
  local row, col = M.pos(buf, id)
  api.nvim_buf_set_text(buf, row, col, row, col, vim.split(text, '\n', { plain = true }))
end

---@param buf integer
---@param b turnstoned.Block
---@param first integer
---@param last integer
local function place(buf, b, first, last)
  local last_line = api.nvim_buf_get_lines(buf, last, last + 1, false)[1] or ''
  b.start = api.nvim_buf_set_extmark(buf, M.ns, first, 0, { id = b.start, right_gravity = false })
  b.stop = api.nvim_buf_set_extmark(buf, M.ns, last, #last_line, { id = b.stop, right_gravity = true })
end

--- Run `fn`, an edit after which block `b` spans rows `first`..`last` (0-based). Folds are
--- computed while the lines change, so the block claims its new rows before they do.
---@param buf integer
---@param b turnstoned.Block
---@param first integer
---@param last integer
---@param fn fun()
function M.reshape(buf, b, first, last, fn)
  b.fixed = { first, last }
  fold_cache[buf] = nil
  local ok, err = pcall(fn)
  b.fixed = nil
  fold_cache[buf] = nil
  place(buf, b, first, last)
  if not ok then
    error(err, 0)
  end
end

--- A new block that `fn` writes at rows `first`..`last` (0-based).
---@param buf integer
---@param first integer
---@param last integer
---@param fold boolean
---@param label? fun(): string
---@param fn fun()
---@return turnstoned.Block
function M.block(buf, first, last, fold, label, fn)
  local b = { fold = fold, label = label }
  blocks[buf] = blocks[buf] or {}
  table.insert(blocks[buf], b)
  M.reshape(buf, b, first, last, fn)
  return b
end

---@param buf integer
---@param b turnstoned.Block
---@return integer first, integer last 0-based rows
function M.range(buf, b)
  if b.fixed then
    return b.fixed[1], b.fixed[2]
  end
  return (M.pos(buf, b.start)), (M.pos(buf, b.stop))
end

--- Forget the blocks and marks of a buffer that is being redrawn or wiped.
---@param buf integer
function M.reset(buf)
  blocks[buf] = nil
  fold_cache[buf] = nil
  if api.nvim_buf_is_valid(buf) then
    api.nvim_buf_clear_namespace(buf, M.ns, 0, -1)
    api.nvim_buf_clear_namespace(buf, M.status_ns, 0, -1)
  end
end

---@param buf integer
---@return table<integer, string>
local function levels(buf)
  local tick = api.nvim_buf_get_changedtick(buf)
  local cache = fold_cache[buf]
  if cache and cache.tick == tick then
    return cache.levels
  end
  local out = {}
  for _, b in ipairs(blocks[buf] or {}) do
    if b.fold then
      local first, last = M.range(buf, b)
      if last > first then
        out[first + 1] = '>1'
        for row = first + 2, last + 1 do
          out[row] = '1'
        end
      end
    end
  end
  fold_cache[buf] = { tick = tick, levels = out }
  return out
end

--- 'foldexpr' of transcript windows: each foldable block is one fold.
---@return string
function M.foldexpr()
  return levels(api.nvim_get_current_buf())[vim.v.lnum] or '0'
end

--- 'foldtext' of transcript windows: the block's header and what its label adds.
---@return string
function M.foldtext()
  local buf = api.nvim_get_current_buf()
  local header = api.nvim_buf_get_lines(buf, vim.v.foldstart - 1, vim.v.foldstart, false)[1] or ''
  local count = vim.v.foldend - vim.v.foldstart
  local size = count == 1 and '1 line' or ('%d lines'):format(count)
  for _, b in ipairs(blocks[buf] or {}) do
    local label = b.label and (M.pos(buf, b.start)) == vim.v.foldstart - 1 and b.label() or ''
    if label ~= '' then
      return ('%s  %s · %s'):format(header, label, size)
    end
  end
  return ('%s  · %s'):format(header, size)
end

return M
