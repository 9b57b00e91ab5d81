--- @-mentions in a prompt: `@path`, `@path:12` and `@path:10-40` name a file (a line range
--- of it) or a folder for the model to read with the prompt. The prompt's text keeps what
--- was typed; each mention also becomes a `mention` input item.
local M = {}

--- What may come right before the `@` of a mention (so `a@b.c` is not one).
local BEFORE = '[%s%(%[{"\'`]'
--- Punctuation that ends a sentence rather than a path.
local TRAILING = '[%.,;:!%?%)%]}"\'`]+$'

---@param path string
---@param cwd string
---@return string
local function absolute(path, cwd)
  if path:sub(1, 2) == '~/' then
    return vim.fs.normalize(path)
  end
  return path:sub(1, 1) == '/' and path or (cwd .. '/' .. path)
end

--- One `@...` word as a mention: its path and line range, or nil when it has no path.
---@param word string what follows the `@`
---@return {path: string, startLine?: integer, endLine?: integer}?
function M.parse_word(word)
  word = word:gsub(TRAILING, '')
  local path, first, last = word:match('^(.-):(%d+)%-(%d+)$')
  if not path then
    path, first = word:match('^(.-):(%d+)$')
    last = first
  end
  path = path or word
  if path == '' then
    return nil
  end
  local out = { path = path }
  if first then
    local a, b = tonumber(first), tonumber(last)
    if a and b and a >= 1 then
      out.startLine, out.endLine = math.min(a, b), math.max(a, b)
    end
  end
  return out
end

--- The mentions of a prompt that name an existing file or folder (relative to `cwd`, the
--- session's directory), each once, in the order typed: `turn/start` input items.
---@param text string
---@param cwd string
---@return turnstoned.MentionInput[]
function M.items(text, cwd)
  local out, seen = {}, {}
  local padded = ' ' .. text
  for at, word in padded:gmatch('()@([^%s@]+)') do
    local before = padded:sub(at - 1, at - 1)
    local m = before:match(BEFORE) and M.parse_word(word)
    if m then
      local path = m.path:sub(1, 2) == '~/' and vim.fs.normalize(m.path) or m.path
      if #path > 1 then
        path = path:gsub('/+$', '')
      end
      local key = ('%s:%s-%s'):format(path, m.startLine or '', m.endLine or '')
      if not seen[key] and vim.uv.fs_stat(absolute(path, cwd)) then
        seen[key] = true
        out[#out + 1] = { type = 'mention', path = path, startLine = m.startLine, endLine = m.endLine }
      end
    end
  end
  return out
end

--- The `@query` being typed at the end of `before` (the line up to the cursor): the query
--- and the byte column (from 0) where it starts, after the `@`.
---@param before string
---@return string? query, integer? col
function M.typing(before)
  local at, query = before:match('()@([^%s@]*)$')
  if not at then
    return nil
  end
  if at > 1 and not before:sub(at - 1, at - 1):match(BEFORE) then
    return nil
  end
  return query, at
end

return M
