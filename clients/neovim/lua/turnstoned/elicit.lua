--- An MCP server's questions (`mcpServer/elicit`): while one of its tools runs, a server
--- asks the user to fill in a small form. It is asked like the daemon's other questions,
--- one prompt at a time: Answer / Decline / Cancel first, then each field of the form.
---
--- The form is a flat JSON Schema object. Its fields are asked in this order: the required
--- ones as `required` lists them, then the others by name (a decoded JSON object keeps no
--- order). Dismissing any prompt cancels; the daemon withdrawing the question (another
--- editor answered it, the turn was interrupted) closes the prompt that is open.
local client = require('turnstoned.client')
local log = require('turnstoned.log')
local P = require('turnstoned.protocol')
local questions = require('turnstoned.questions')

local methods = P.methods
local M = {}

local asked = 0

---@class turnstoned.ElicitField
---@field name string
---@field label string     what the prompt calls it (its title, else its name)
---@field description? string
---@field required boolean
---@field kind 'string'|'number'|'integer'|'boolean'|'enum'
---@field choices? {value: any, label: string}[]  an enum's values
---@field default? any
---@field schema table     the property's own schema

---@class turnstoned.ElicitQuestion : turnstoned.Question
---@field params turnstoned.McpElicitParams
---@field withdrawn? boolean
---@field noted? boolean

--- An enum property's values with their labels: `enum` (labelled by `enumNames` when it
--- has them), or `oneOf`/`anyOf` of `{const, title}`; nil when the property is no enum.
---@param prop table
---@return {value: any, label: string}[]?
local function enum_choices(prop)
  if type(prop.enum) == 'table' and #prop.enum > 0 then
    local names = type(prop.enumNames) == 'table' and prop.enumNames or {}
    return vim.tbl_map(function(i)
      return { value = prop.enum[i], label = tostring(names[i] or prop.enum[i]) }
    end, vim.fn.range(1, #prop.enum))
  end
  local options = prop.oneOf or prop.anyOf
  if type(options) == 'table' and #options > 0 then
    local out = {}
    for _, option in ipairs(options) do
      if type(option) ~= 'table' or option.const == nil then
        return nil
      end
      out[#out + 1] = { value = option.const, label = tostring(option.title or option.const) }
    end
    return out
  end
end

--- The form's fields, in the order they are asked.
---@param schema table
---@return turnstoned.ElicitField[]
function M.fields(schema)
  local props = type(schema) == 'table' and type(schema.properties) == 'table' and schema.properties or {}
  local required, order = {}, {}
  for _, name in ipairs(type(schema.required) == 'table' and schema.required or {}) do
    if props[name] ~= nil and not required[name] then
      required[name] = true
      order[#order + 1] = name
    end
  end
  local rest = vim.tbl_filter(function(name)
    return not required[name]
  end, vim.tbl_keys(props))
  table.sort(rest)
  vim.list_extend(order, rest)
  return vim.tbl_map(function(name)
    local prop = type(props[name]) == 'table' and props[name] or {}
    local choices = enum_choices(prop)
    local kind = choices and 'enum' or prop.type
    if not vim.tbl_contains({ 'string', 'number', 'integer', 'boolean', 'enum' }, kind) then
      kind = 'string'
    end
    local default = prop.default
    if default == vim.NIL then
      default = nil
    end
    return {
      name = name,
      label = type(prop.title) == 'string' and prop.title or name,
      description = type(prop.description) == 'string' and prop.description or nil,
      required = required[name] == true,
      kind = kind,
      choices = choices,
      default = default,
      schema = prop,
    }
  end, order)
end

--- What is wrong with `text` as the value of a number or integer field (nil: nothing),
--- and the value.
---@param field turnstoned.ElicitField
---@param text string
---@return string? problem
---@return number? value
function M.number(field, text)
  local value = tonumber(vim.trim(text))
  if not value or value ~= value or value == math.huge or value == -math.huge then
    return ('%q is not a number'):format(text)
  end
  if field.kind == 'integer' and value ~= math.floor(value) then
    return ('%q is not a whole number'):format(text)
  end
  local s = field.schema
  if type(s.minimum) == 'number' and value < s.minimum then
    return ('%s is less than %s'):format(text, s.minimum)
  elseif type(s.maximum) == 'number' and value > s.maximum then
    return ('%s is more than %s'):format(text, s.maximum)
  end
  if field.kind == 'integer' then
    value = math.floor(value)
  end
  return nil, value
end

--- What is wrong with `text` as the value of a string field (nil: nothing).
---@param field turnstoned.ElicitField
---@param text string
---@return string?
local function string_problem(field, text)
  local n, s = vim.fn.strchars(text), field.schema
  if type(s.minLength) == 'number' and n < s.minLength then
    return ('at least %d characters'):format(s.minLength)
  elseif type(s.maxLength) == 'number' and n > s.maxLength then
    return ('at most %d characters'):format(s.maxLength)
  end
end

---@param msg string
local function complain(msg)
  vim.notify('turnstoned: ' .. msg, vim.log.levels.WARN)
end

--- The prompt that asks for one field.
---@param field turnstoned.ElicitField
---@return string
local function field_prompt(field)
  local text = field.label
  if field.description and field.description ~= field.label then
    text = ('%s (%s)'):format(text, field.description)
  end
  return text .. (field.required and ' [required]' or ' [optional]') .. ': '
end

--- A boolean or enum field: `vim.ui.select` of its values, the default first; an optional
--- field without a default can be left empty.
---@param q turnstoned.ElicitQuestion
---@param field turnstoned.ElicitField
---@param done fun(ok: boolean, value?: any)  ok false: dismissed
local function ask_choice(q, field, done)
  local values = field.kind == 'boolean' and { { value = true, label = 'yes' }, { value = false, label = 'no' } }
    or field.choices
  local list, by_id = {}, {}
  local function add(choice, mark)
    local id = tostring(#list + 1)
    by_id[id] = choice
    list[#list + 1] = { id = id, label = choice.label .. (mark or '') }
  end
  for _, choice in ipairs(values) do
    if field.default ~= nil and vim.deep_equal(choice.value, field.default) then
      add(choice, ' (default)')
    end
  end
  for _, choice in ipairs(values) do
    if field.default == nil or not vim.deep_equal(choice.value, field.default) then
      add(choice)
    end
  end
  if not field.required and field.default == nil then
    list[#list + 1] = { id = 'none', label = '(leave empty)' }
  end
  questions.select(q, field_prompt(field):gsub(':%s*$', ''), list, function(id)
    if id == nil then
      return done(false)
    end
    done(true, by_id[id] and by_id[id].value)
  end)
end

--- A string, number or integer field: `vim.ui.input` with its default filled in; asked
--- again while the text is not a valid value, or empty and the field required.
---@param q turnstoned.ElicitQuestion
---@param field turnstoned.ElicitField
---@param done fun(ok: boolean, value?: any)
local function ask_text(q, field, done)
  local default = field.default ~= nil and tostring(field.default) or ''
  questions.input(q, { prompt = field_prompt(field), default = default }, function(text)
    if text == nil then
      return done(false)
    end
    local again = function()
      ask_text(q, field, done)
    end
    if text == '' then
      if field.required then
        complain(('%s is required'):format(field.label))
        return again()
      end
      return done(true, nil)
    end
    if field.kind == 'string' then
      local problem = string_problem(field, text)
      if problem then
        complain(('%s: %s'):format(field.label, problem))
        return again()
      end
      return done(true, text)
    end
    local problem, value = M.number(field, text)
    if problem then
      complain(('%s: %s'):format(field.label, problem))
      return again()
    end
    done(true, value)
  end)
end

--- Ask the fields from the `i`th on, then accept with what was filled in.
---@param q turnstoned.ElicitQuestion
---@param fields turnstoned.ElicitField[]
---@param i integer
---@param content table
local function ask_fields(q, fields, i, content)
  local field = fields[i]
  if not field then
    return questions.finish(q, { action = 'accept', content = content })
  end
  local ask = (field.kind == 'boolean' or field.kind == 'enum') and ask_choice or ask_text
  ask(q, field, function(ok, value)
    if not ok then
      return questions.finish(q, { action = 'cancel' })
    end
    content[field.name] = value -- nil: an optional field left empty is left out
    ask_fields(q, fields, i + 1, content)
  end)
end

--- What the first prompt says.
---@param params turnstoned.McpElicitParams
---@return string
local function title(params)
  local text = ('%s asks: %s'):format(params.server, params.message)
  if not require('turnstoned.session').get(params.sessionId) then
    text = ('[session %s] %s'):format(tostring(params.sessionId):sub(1, 8), text)
  end
  return text
end

---@param q turnstoned.ElicitQuestion
local function run(q)
  questions.select(q, title(q.params), {
    { id = 'accept', label = 'Answer' },
    { id = 'decline', label = 'Decline' },
    { id = 'cancel', label = 'Cancel' },
  }, function(id)
    if id == 'accept' then
      return ask_fields(q, M.fields(q.params.requestedSchema or {}), 1, vim.empty_dict())
    end
    questions.finish(q, { action = id == 'decline' and 'decline' or 'cancel' })
  end)
end

--- The transcript notes the question and how it ended.
---@param params turnstoned.McpElicitParams
---@param how string
local function note(params, how)
  local chat = require('turnstoned.session').get(params.sessionId)
  if chat then
    chat:note(('> ❓ %s asked: %s — %s'):format(params.server, params.message:gsub('\n', ' '), how))
  end
end

local how_said = { accept = 'answered', decline = 'declined', cancel = 'cancelled' }

---@param params turnstoned.McpElicitParams
---@param respond fun(result: table)
---@param request turnstoned.DaemonRequest
function M.request(params, respond, request)
  asked = asked + 1
  local key = 'elicit:' .. tostring(request and request.id or asked)
  local chat = require('turnstoned.session').get(params.sessionId)
  local working = chat and chat.working_text
  if chat then
    chat:working(('waiting for your answer to %s'):format(params.server))
  end
  ---@type turnstoned.ElicitQuestion
  local q
  q = {
    key = key,
    params = params,
    fallback = { action = 'cancel' },
    respond = function(result)
      if chat and chat.working_text and chat.working_text:find('waiting for your answer', 1, true) then
        chat:working(working)
      end
      local how = q.withdrawn and 'withdrawn (answered elsewhere, or the call ended)'
        or how_said[result.action] or result.action
      log.info('%s %s: %s', methods.mcp_server_elicit, key, how)
      note(params, how)
      respond(result)
    end,
    ask = run,
  }
  if request then
    request.on_withdraw(function()
      q.withdrawn = true
      questions.withdraw(key)
    end)
  end
  questions.push(q)
end

--- Answer the daemon's `mcpServer/elicit` requests (called once, on first use).
function M.wire()
  client.on_request(methods.mcp_server_elicit, M.request)
end

return M
