--- Completion in the prompt buffer: `@` and a few letters complete the workspace's file
--- paths (`workspace/findFiles`, asked as you type; a late answer to an older query is
--- dropped), `/` at the start of the prompt completes the session's slash commands
--- (`session/commands`) and then a command's argument (the modes; the models for `/model`).
---
--- The menu opens by itself as you type (option `auto_complete`); 'omnifunc' gives the same
--- items on |i_CTRL-X_CTRL-O|.
local client = require('turnstoned.client')
local commands = require('turnstoned.commands')
local mentions = require('turnstoned.mentions')
local P = require('turnstoned.protocol')
local session = require('turnstoned.session')

local api = vim.api
local methods = P.methods
local M = {}

local LIMIT = 50 -- files a query asks for
local SYNC_MS = 2000 -- the omnifunc waits this long for an answer
local MODELS_FOR_MS = 30000 -- what model/list gave serves `/model ` completion this long

---@type {at: integer, models: turnstoned.ModelOption[]}?
local listed_models

--- What the text before the cursor is completing.
---@class turnstoned.CompletionContext
---@field kind 'file'|'command'|'argument'
---@field query string the letters typed
---@field col integer byte column (from 1) where the completed text starts
---@field command? string the command whose argument is completed

--- What is being completed at the end of `before` (the cursor line up to the cursor) on
--- line `lnum`, or nil.
---@param before string
---@param lnum integer
---@return turnstoned.CompletionContext?
function M.context(before, lnum)
  local query, at = mentions.typing(before)
  if query then
    -- After the path, `:10-40` is a line range: nothing to complete.
    return not query:find(':', 1, true) and { kind = 'file', query = query, col = at + 1 } or nil
  end
  if lnum ~= 1 then
    return nil
  end
  local name = before:match('^/([%w_.:-]*)$')
  if name then
    return { kind = 'command', query = name, col = 2 }
  end
  local cmd, arg = before:match('^/([%w_.:-]+)%s+(%S*)$')
  if cmd then
    return { kind = 'argument', command = cmd, query = arg, col = #before - #arg + 1 }
  end
end

---@param text string
---@param width integer
---@return string
local function clip(text, width)
  text = (text or ''):gsub('\n', ' ')
  return vim.fn.strchars(text) > width and (vim.fn.strcharpart(text, 0, width - 1) .. '…') or text
end

--- A found file as a completion item; its matched characters go to `user_data`.
---@param f turnstoned.FoundFile
---@return table
function M.file_item(f)
  return {
    word = f.path,
    kind = 'file',
    dup = 1,
    user_data = { turnstoned = { positions = f.positions or {} } },
  }
end

---@param c turnstoned.SessionCommand
---@return table
function M.command_item(c)
  local args = vim.tbl_map(function(a)
    return '{' .. a.name .. '}'
  end, c.arguments or {})
  return {
    word = c.name,
    abbr = c.name .. (#args > 0 and (' ' .. table.concat(args, ' ')) or ''),
    kind = c.kind ~= 'builtin' and c.kind or '',
    menu = clip(c.description, 50),
    info = c.description,
    dup = 1,
  }
end

--- Ask for the items of a context; `cb(items)` (nil: the question failed).
---@param ctx turnstoned.CompletionContext
---@param cb fun(items?: table[])
function M.items(ctx, cb)
  if ctx.kind == 'file' then
    local chat = session.peek()
    local params = { query = ctx.query, limit = LIMIT }
    if chat and chat.sid then
      params.sessionId = chat.sid
    else
      params.root = session.cwd()
    end
    return client.request(methods.workspace_find_files, params, function(err, result)
      cb(not err and vim.tbl_map(M.file_item, result.files or {}) or nil)
    end)
  end
  local function from(list)
    if ctx.kind == 'command' then
      return vim.tbl_map(M.command_item, vim.tbl_filter(function(c)
        return vim.startswith(c.name, ctx.query)
      end, list))
    end
    local cmd = commands.find(list, ctx.command or '')
    local arg = cmd and (cmd.arguments or {})[1]
    if not arg then
      return {}
    end
    if #(arg.choices or {}) > 0 then
      return vim.tbl_map(function(choice)
        return { word = choice, kind = arg.name, dup = 1 }
      end, vim.tbl_filter(function(choice)
        return vim.startswith(choice, ctx.query)
      end, arg.choices))
    end
    return nil -- asked below
  end
  local function models(list)
    cb(vim.tbl_map(function(m)
      return { word = m.name, kind = 'model', menu = m.current and 'the default' or '', dup = 1 }
    end, vim.tbl_filter(function(m)
      return vim.startswith(m.name, ctx.query)
    end, list)))
  end
  local function answer(list)
    local items = from(list)
    if items or ctx.command ~= 'model' then
      return cb(items or {})
    end
    local now = vim.uv.now()
    if listed_models and now - listed_models.at < MODELS_FOR_MS then
      return models(listed_models.models)
    end
    client.request(methods.model_list, nil, function(err, result)
      if err then
        return cb(nil)
      end
      listed_models = { at = now, models = result.models or {} }
      models(listed_models.models)
    end)
  end
  -- A fresh list when the command name starts (skills are files: one may be new); the
  -- list already had for the letters typed after it.
  local known = commands.known()
  if known and not (ctx.kind == 'command' and ctx.query == '') then
    return answer(known)
  end
  commands.list(function(err, list)
    if err then
      return cb(nil)
    end
    answer(list or {})
  end)
end

local generation = 0
local accepted ---@type string? the text before the cursor when an item was taken

--- The text before the cursor of the current window, and its line.
---@return string before, integer lnum
local function before_cursor()
  local cursor = api.nvim_win_get_cursor(0)
  local line = api.nvim_get_current_line()
  return line:sub(1, cursor[2]), cursor[1]
end

--- Ask for what the text at the cursor completes, and show the answer if it is still what
--- is typed there when it arrives.
---@param buf integer
function M.trigger(buf)
  if api.nvim_get_current_buf() ~= buf then
    return
  end
  local before, lnum = before_cursor()
  if before == accepted then
    return -- an item was just taken: do not offer it again
  end
  if vim.fn.pumvisible() == 1 then
    local info = vim.fn.complete_info({ 'selected', 'items' })
    local item = info.selected >= 0 and info.items[info.selected + 1]
    if item and item.word ~= '' and vim.endswith(before, item.word) then
      return -- the text changed because an item was chosen in the menu
    end
  end
  local ctx = M.context(before, lnum)
  generation = generation + 1
  if not ctx then
    return
  end
  local mine = generation
  M.items(ctx, function(items)
    if mine ~= generation or not items or api.nvim_get_current_buf() ~= buf
        or not vim.startswith(api.nvim_get_mode().mode, 'i') then
      return -- stale: the user typed on, left the prompt or Insert mode
    end
    local now_before, now_lnum = before_cursor()
    if now_before ~= before or now_lnum ~= lnum then
      return
    end
    if #items == 0 and vim.fn.pumvisible() == 0 then
      return
    end
    vim.fn.complete(ctx.col, items)
  end)
end

--- 'omnifunc' of the prompt buffer (waits at most 2 s for the daemon).
---@param findstart integer
---@param base string
---@return integer|table
function M.omnifunc(findstart, base)
  local before, lnum = before_cursor()
  local ctx = M.context(before, lnum)
  if findstart == 1 then
    return ctx and (ctx.col - 1) or -3
  end
  if not ctx then
    return {}
  end
  ctx.query = base
  local done, items = false, nil
  M.items(ctx, function(found)
    done, items = true, found
  end)
  vim.wait(SYNC_MS, function()
    return done
  end, 10)
  return items or {}
end

--- Complete in `buf` (the prompt buffer): 'omnifunc', and the menu as you type.
---@param buf integer
---@param auto boolean open the menu by itself
function M.attach(buf, auto)
  vim.bo[buf].omnifunc = "v:lua.require'turnstoned.complete'.omnifunc"
  if vim.fn.has('nvim-0.11') == 1 then -- 'completeopt' is local to a buffer from 0.11
    -- The daemon's order is kept (nosort); the menu marks the letters that match (fuzzy).
    pcall(api.nvim_set_option_value, 'completeopt', 'menuone,noinsert,popup,fuzzy,nosort', { buf = buf })
  end
  if not auto then
    return
  end
  local group = api.nvim_create_augroup('turnstoned.complete.' .. buf, { clear = true })
  api.nvim_create_autocmd('CompleteDone', {
    group = group,
    buffer = buf,
    callback = function()
      local item = vim.v.completed_item
      accepted = type(item) == 'table' and item.word and item.word ~= '' and (before_cursor()) or nil
    end,
  })
  api.nvim_create_autocmd({ 'TextChangedI', 'TextChangedP' }, {
    group = group,
    buffer = buf,
    callback = function()
      M.trigger(buf)
    end,
  })
end

return M
