--- Previews the model opens (`open_preview`): named in the transcript; `:TurnstonedPreview`
--- shows the text kinds in a read-only buffer (a web page as its text) and hands PDFs and
--- images to the system opener. The content is untrusted: nothing in it runs inside
--- Neovim, and a web page handed to a browser carries the daemon's Content-Security-Policy.
local client = require('turnstoned.client')
local P = require('turnstoned.protocol')

local api = vim.api
local M = {}

---@param msg string
---@param level? integer
local function notify(msg, level)
  vim.notify('turnstoned: ' .. msg, level or vim.log.levels.INFO)
end

--- The daemon announced a preview in `chat`.
---@param chat turnstoned.Chat
---@param p turnstoned.PreviewOpen
function M.opened(chat, p)
  chat.previews = chat.previews or {}
  table.insert(chat.previews, p)
  local dir = chat.info and chat.info.cwd
  local source = dir and vim.startswith(p.source, dir .. '/') and p.source:sub(#dir + 2) or p.source
  chat:note(('> 📄 preview (%s): %s — %s · :TurnstonedPreview shows it'):format(p.kind, p.title, source))
end

---@param p turnstoned.PreviewOpen
---@return string?
local function filetype(p)
  if p.kind == 'table' then
    local ct = p.contentType or ''
    return ct:find('json', 1, true) and 'json' or ct:find('tab', 1, true) and 'tsv' or 'csv'
  end
  return ({ web = 'markdown', markdown = 'markdown', text = 'text' })[p.kind]
end

---@param p turnstoned.PreviewOpen
---@param ext string
---@param bytes string
---@return string path
local function temp_file(p, ext, bytes)
  local path = vim.fn.tempname() .. '.' .. ext
  local file = assert(io.open(path, 'wb'))
  file:write(bytes)
  file:close()
  return path
end

---@param path string
local function system_open(path)
  local _, err = vim.ui.open(path)
  notify(err and ('saved %s (%s)'):format(path, err) or ('opened ' .. path))
end

--- A web page for the system viewer: its policy (no scripts, no network loads) first, so
--- it holds for everything after it. `sandbox` cannot be set this way and is left out.
---@param p turnstoned.PreviewOpen
---@param bytes string
function M.open_web(p, bytes)
  local csp = (p.csp or ''):gsub('%s*;?%s*sandbox%s*$', ''):gsub('"', '')
  local meta = ('<meta http-equiv="Content-Security-Policy" content="%s">\n'):format(csp)
  system_open(temp_file(p, 'html', meta .. bytes))
end

---@param p turnstoned.PreviewOpen
---@param bytes string
local function show_text(p, bytes)
  local buf = api.nvim_create_buf(false, true)
  pcall(api.nvim_buf_set_name, buf, ('turnstoned://preview/%s/%s'):format(p.previewId:sub(1, 8), p.title))
  vim.bo[buf].buftype, vim.bo[buf].bufhidden, vim.bo[buf].swapfile = 'nofile', 'wipe', false
  local text = p.kind == 'web' and require('turnstoned.html').to_text(bytes) or bytes
  local lines = vim.split(text, '\r?\n')
  if lines[#lines] == '' then
    table.remove(lines)
  end
  api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].filetype = filetype(p) or ''
  vim.cmd('botright split')
  api.nvim_win_set_buf(0, buf)
  local key = require('turnstoned.config').get().keymaps.preview_open
  local hint = ''
  if p.kind == 'web' and key then
    vim.keymap.set('n', key, function()
      M.open_web(p, bytes)
    end, { buffer = buf, desc = 'turnstoned: open this page in the system viewer (no scripts)' })
    hint = (' · %s: in the system viewer'):format(key)
  end
  vim.wo[0][0].winbar = (' preview: %s%%=%s%s '):format(p.title:gsub('%%', '%%%%'), p.source:gsub('%%', '%%%%'),
    hint:gsub('%%', '%%%%'))
end

---@param p turnstoned.PreviewOpen
---@param bytes string
local function show_file(p, bytes)
  local ext = p.kind == 'pdf' and 'pdf' or ((p.contentType or ''):match('^image/([%w]+)') or 'bin')
  system_open(temp_file(p, ext, bytes))
end

--- Fetch a preview's content and show it.
---@param p turnstoned.PreviewOpen
function M.show(p)
  client.request(P.methods.preview_read, { sessionId = p.sessionId, previewId = p.previewId },
    function(err, result)
      if err or not result then
        return notify('cannot read the preview: ' .. (err and err.message or '?'), vim.log.levels.ERROR)
      end
      local bytes = vim.base64.decode(result.data)
      if p.kind == 'pdf' or p.kind == 'image' then
        return show_file(p, bytes)
      end
      show_text(p, bytes)
    end)
end

--- Show a preview of `chat`; with several, pick one (newest first).
---@param chat? turnstoned.Chat
function M.pick(chat)
  local previews = chat and chat.previews or {}
  if #previews == 0 then
    return notify('the model has opened no preview in this chat')
  elseif #previews == 1 then
    return M.show(previews[1])
  end
  local newest = {}
  for i = #previews, 1, -1 do
    newest[#newest + 1] = previews[i]
  end
  vim.ui.select(newest, {
    prompt = 'turnstoned previews',
    kind = 'turnstoned.preview',
    format_item = function(p)
      return ('%s (%s) — %s'):format(p.title, p.kind, p.source)
    end,
  }, function(p)
    if p then
      M.show(p)
    end
  end)
end

return M
