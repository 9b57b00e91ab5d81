--- A web page as plain text for a read-only buffer: scripts, styles and comments dropped,
--- tags removed, block elements on lines of their own, entities decoded. It runs nothing
--- and fetches nothing, and its time is linear in the page's size (every scan moves on).
local M = {}

-- Elements whose content is not text a reader wants.
local DROPPED = { 'script', 'style', 'noscript', 'template', 'svg', 'head' }

-- Tags that start a new line (and, for headings and items, a markdown prefix).
local BREAKS = {
  br = '\n', p = '\n\n', div = '\n', tr = '\n', table = '\n\n', section = '\n\n',
  article = '\n\n', header = '\n\n', footer = '\n\n', main = '\n\n', nav = '\n\n',
  blockquote = '\n\n', pre = '\n\n', ul = '\n', ol = '\n', hr = '\n\n---\n\n', dt = '\n', dd = '\n  ',
  li = '\n- ', h1 = '\n\n# ', h2 = '\n\n## ', h3 = '\n\n### ', h4 = '\n\n#### ', h5 = '\n\n##### ',
  h6 = '\n\n###### ', td = ' ', th = ' ', title = '', figcaption = '\n',
}

-- Closing tags that end a block with a line break (an item or a cell ends at the next one).
local CLOSE_BREAKS = { p = true, div = true, h1 = true, h2 = true, h3 = true, h4 = true, h5 = true,
  h6 = true, table = true, section = true, article = true, header = true, footer = true,
  main = true, nav = true, blockquote = true, pre = true, ul = true, ol = true }

local ENTITIES = { amp = '&', lt = '<', gt = '>', quot = '"', apos = "'", nbsp = ' ', mdash = '—',
  ndash = '–', hellip = '…', copy = '©', reg = '®', laquo = '«', raquo = '»', rsquo = '’',
  lsquo = '‘', rdquo = '”', ldquo = '“', middot = '·', bull = '•', times = '×' }

--- `html` without comments and the elements named in DROPPED (their whole content). Each
--- kind of opening is looked for again only once the text before it is passed, so no
--- part of the page is scanned more than a few times.
---@param html string
---@return string
local function drop_elements(html)
  local lower = html:lower()
  local next_at = {} ---@type table<string, integer|false>
  ---@param key string
  ---@param from integer
  ---@return integer|false
  local function find(key, from)
    local at = next_at[key]
    if at == nil or (at and at < from) then
      at = from
      while true do
        at = lower:find(key == '!--' and '<!--' or ('<' .. key), at, true) or false
        if not at or key == '!--' or lower:sub(at + #key + 1, at + #key + 1):match('[%s>/]') then
          break
        end
        at = at + 1 -- `<header` is not `<head`
      end
      next_at[key] = at
    end
    return at
  end
  local out, pos = {}, 1
  while true do
    local at, name = nil, nil
    for _, key in ipairs({ '!--', unpack(DROPPED) }) do
      local found = find(key, pos)
      if found and (not at or found < at) then
        at, name = found, key
      end
    end
    if not at then
      break
    end
    out[#out + 1] = html:sub(pos, at - 1)
    local stop
    if name == '!--' then
      stop = select(2, lower:find('-->', at + 4, true))
    else
      stop = select(2, lower:find('</' .. name .. '%s*>', at))
    end
    if not stop then
      return table.concat(out) -- unclosed: the rest belongs to it
    end
    pos = stop + 1
  end
  out[#out + 1] = html:sub(pos)
  return table.concat(out)
end

--- What a tag becomes: an opening one the break (and prefix) it stands for, a closing one
--- of a block just a line break.
---@param tag string the tag's first characters, after `<`
---@return string
local function tag_text(tag)
  local closing, name = tag:lower():match('^(/?)(%w+)')
  if closing == '/' then
    return CLOSE_BREAKS[name] and '\n' or ''
  end
  return name and BREAKS[name] or ''
end

--- Tags become the breaks they stand for, or nothing; a `<` that starts no tag is text.
---@param html string
---@return string
local function strip_tags(html)
  local out, pos, from = {}, 1, 1
  while true do
    local open = html:find('<', from, true)
    if not open then
      break
    end
    if not html:sub(open + 1, open + 1):match('[%a/!?]') then
      from = open + 1 -- `a < b`: not a tag
    else
      local close = html:find('>', open + 1, true)
      if not close then
        break -- no tag ends after this one either: the rest is text
      end
      out[#out + 1] = html:sub(pos, open - 1)
      out[#out + 1] = tag_text(html:sub(open + 1, math.min(close - 1, open + 12)))
      pos, from = close + 1, close + 1
    end
  end
  out[#out + 1] = html:sub(pos)
  return table.concat(out)
end

---@param body string
---@return string?
local function entity(body)
  local num = body:match('^#(%d+)$')
  local hex = body:match('^#[xX](%x+)$')
  local code = num and tonumber(num) or hex and tonumber(hex, 16)
  if code then
    return (code > 0 and code < 0x110000) and vim.fn.nr2char(code) or ''
  end
  return ENTITIES[body]
end

--- The text of an HTML page.
---@param html string
---@return string
function M.to_text(html)
  local text = strip_tags(drop_elements(html))
  text = text:gsub('&(#?%w%w?%w?%w?%w?%w?%w?%w?);', function(body)
    return entity(body)
  end)
  text = text:gsub('\r\n?', '\n'):gsub('[ \t\f\v]+', ' '):gsub(' *\n *', '\n'):gsub('\n\n\n+', '\n\n')
  return vim.trim(text)
end

return M
