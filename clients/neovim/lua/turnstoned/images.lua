--- Pictures with a prompt: `:Turnstoned image {path}` and `:Turnstoned paste-image` attach
--- one to the current chat's next prompt (an `image` input item: a path, or the clipboard's
--- PNG as base64). The daemon checks the bytes and whether the model takes pictures.
local session = require('turnstoned.session')

local M = {}

local MAX_BYTES = 4 * 1024 * 1024 -- what the daemon takes

---@param msg string
---@param level? integer
local function notify(msg, level)
  vim.notify('turnstoned: ' .. msg, level or vim.log.levels.INFO)
end

---@param chat turnstoned.Chat
---@param attachment turnstoned.Attachment
local function attach(chat, attachment)
  chat.attachments = chat.attachments or {}
  table.insert(chat.attachments, attachment)
  session.refresh()
  local count = #chat.attachments
  notify(('[image: %s] goes with the next prompt%s'):format(attachment.name,
    count > 1 and (' (%d pictures)'):format(count) or ''))
end

--- Attach an image file to the current chat's next prompt.
---@param path string
---@return boolean attached
function M.attach(path)
  if not path or vim.trim(path) == '' then
    notify('give the path of a picture: :Turnstoned image {path}', vim.log.levels.WARN)
    return false
  end
  local abs = vim.fs.normalize(vim.fn.fnamemodify(vim.fn.expand(vim.trim(path)), ':p'))
  local stat = vim.uv.fs_stat(abs)
  if not stat or stat.type ~= 'file' then
    notify('no such file: ' .. path, vim.log.levels.ERROR)
    return false
  elseif stat.size > MAX_BYTES then
    notify(('%s is %.1f MB: a picture can be at most 4 MB'):format(path, stat.size / 1048576),
      vim.log.levels.ERROR)
    return false
  end
  attach(session.current(), { name = vim.fs.basename(abs), item = { type = 'image', path = abs } })
  return true
end

--- The clipboard tool that gives a PNG, as a command line (nil: none is installed).
---@return string[]?
function M.clipboard_command()
  if vim.env.WAYLAND_DISPLAY and vim.fn.executable('wl-paste') == 1 then
    return { 'wl-paste', '--no-newline', '--type', 'image/png' }
  elseif vim.fn.executable('xclip') == 1 then
    return { 'xclip', '-selection', 'clipboard', '-target', 'image/png', '-out' }
  elseif vim.fn.executable('wl-paste') == 1 then
    return { 'wl-paste', '--no-newline', '--type', 'image/png' }
  end
end

local pasted = 0

--- Attach the clipboard's picture (PNG) to the current chat's next prompt.
---@param cb? fun(attached: boolean)
function M.paste(cb)
  cb = cb or function() end
  local cmd = M.clipboard_command()
  if not cmd then
    notify('pasting a picture needs wl-paste (Wayland) or xclip (X11), and neither is installed; '
      .. 'save it to a file and use :Turnstoned image {path}', vim.log.levels.WARN)
    return cb(false)
  end
  local ok, proc = pcall(vim.system, cmd, { text = false, timeout = 5000 }, vim.schedule_wrap(function(out)
    local data = out.stdout or ''
    if out.code ~= 0 or data == '' then
      local why = vim.trim(out.stderr or '')
      notify('the clipboard holds no picture' .. (why ~= '' and (' (' .. cmd[1] .. ': ' .. why .. ')') or ''),
        vim.log.levels.WARN)
      return cb(false)
    elseif #data > MAX_BYTES then
      notify('the clipboard picture is over 4 MB', vim.log.levels.ERROR)
      return cb(false)
    end
    pasted = pasted + 1
    attach(session.current(), {
      name = pasted == 1 and 'clipboard.png' or ('clipboard-%d.png'):format(pasted),
      item = { type = 'image', data = vim.base64.encode(data), mimeType = 'image/png' },
    })
    cb(true)
  end))
  if not ok then
    notify(('cannot run %s: %s'):format(cmd[1], proc), vim.log.levels.ERROR)
    cb(false)
  end
end

--- Drop the pictures attached to the current chat's next prompt.
function M.clear()
  local chat = session.current()
  local count = #(chat.attachments or {})
  chat.attachments = nil
  session.refresh()
  notify(count == 0 and 'no picture was attached' or 'the attached pictures are dropped')
end

--- What the prompt window's winbar says of the attachments ('' when there are none).
---@param chat? turnstoned.Chat
---@return string
function M.label(chat)
  local names = vim.tbl_map(function(a)
    return ('[image: %s]'):format(a.name)
  end, chat and chat.attachments or {})
  return table.concat(names, ' ')
end

return M
