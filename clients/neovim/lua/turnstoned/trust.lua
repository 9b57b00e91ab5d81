--- Project files that need your trust: a repository's `.mcp.json` starts its servers, and
--- its `.turnstone/policies.toml` lets its allow rules run calls unasked, only once you
--- trust that exact file. The daemon asks when a session opens there; `:TurnstonedMcp` and
--- `:TurnstonedPolicies` trust or revoke on demand. Either way you see the file first.
local client = require('turnstoned.client')
local P = require('turnstoned.protocol')
local questions = require('turnstoned.questions')

local methods = P.methods
local api = vim.api
local M = {}

---@param words string[]
---@return string
local function joined(words)
  return table.concat(vim.tbl_map(function(w)
    return w:find('[%s\'"]') and vim.fn.shellescape(w) or w
  end, words), ' ')
end

--- What a project config would run, exactly as written (nothing expanded).
---@param params turnstoned.McpTrustRequestParams
---@return string[]
function M.describe(params)
  local out = { ('MCP servers of %s'):format(params.configPath), '' }
  if params.previouslyTrusted then
    out[#out + 1] = 'You trusted an earlier version of this file; it has changed since.'
    out[#out + 1] = ''
  end
  for _, s in ipairs(params.servers or {}) do
    out[#out + 1] = ('%s (%s)'):format(s.name, s.transport or 'unknown transport')
    if s.command then
      out[#out + 1] = '  runs:  ' .. joined({ s.command, unpack(s.args or {}) })
    end
    if s.url then
      out[#out + 1] = '  url:   ' .. s.url
    end
    if s.cwd then
      out[#out + 1] = '  in:    ' .. s.cwd
    end
    if #(s.env or {}) > 0 then
      out[#out + 1] = '  sets:  ' .. table.concat(s.env, ' ')
    end
    if #(s.variables or {}) > 0 then
      out[#out + 1] = '  reads your environment variables: ' .. table.concat(s.variables, ' ')
    end
    if s.problem then
      out[#out + 1] = '  will not run: ' .. s.problem
    end
  end
  return out
end

--- One tool policy on a line: "allow bash · command npm test (priority 5) — reason".
---@param pol turnstoned.PolicyInfo
---@return string
function M.policy_line(pol)
  local what = { pol.label or '*' }
  if type(pol.command) == 'string' then
    what[#what + 1] = 'command ' .. pol.command
  end
  if type(pol.path) == 'string' then
    what[#what + 1] = 'path ' .. pol.path
  end
  local line = ('%-5s %s'):format(pol.action, table.concat(what, ' · '))
  if (pol.priority or 0) ~= 0 then
    line = line .. (' (priority %d)'):format(pol.priority)
  end
  if pol.reason and pol.reason ~= '' then
    line = line .. ' — ' .. pol.reason:gsub('\n', ' ')
  end
  if pol.active == false then
    line = line .. '  [not applied: ' .. (pol.note or 'inactive') .. ']'
  end
  return line
end

--- What a workspace's policies file would let through, and what applies whatever you say.
---@param params turnstoned.PolicyTrustRequestParams
---@return string[]
function M.describe_policies(params)
  local out = { ('Tool policies of %s'):format(params.configPath), '' }
  if params.previouslyTrusted then
    vim.list_extend(out, { 'You trusted an earlier version of this file; it has changed since.', '' })
  end
  vim.list_extend(out, { 'Its deny and ask rules apply whatever you answer. Trusting it lets its',
    'allow rules run matching calls without asking you:', '' })
  for _, pol in ipairs(params.policies or {}) do
    out[#out + 1] = '  ' .. M.policy_line(pol)
  end
  return out
end

--- Show `lines` in a window at the top while the question `q` is open.
---@param q turnstoned.Question
---@param lines string[]
local function preview(q, lines)
  local buf = api.nvim_create_buf(false, true)
  api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].bufhidden = 'wipe'
  local win = api.nvim_open_win(buf, false, {
    split = 'above',
    win = -1,
    height = math.min(#lines, math.floor(vim.o.lines / 2)),
  })
  vim.wo[win][0].winbar = ' turnstoned: what this project file would do'
  questions.on_close(q, function()
    if api.nvim_win_is_valid(win) then
      api.nvim_win_close(win, true)
    end
  end)
end

--- Ask about a project config, showing `lines` meanwhile; `respond(id)` gets the choice.
---@param key string
---@param prompt string
---@param choices {id: string, label: string}[]
---@param lines string[]
---@param fallback string the answer when dismissed
---@param respond fun(result: table)
local function ask(key, prompt, choices, lines, fallback, respond)
  questions.push({
    key = key,
    respond = respond,
    fallback = { decision = fallback },
    ask = function(q)
      preview(q, lines)
      questions.select(q, prompt, choices, function(id)
        questions.finish(q, { decision = id or fallback })
      end)
    end,
  })
end

--- The daemon asks whether a project's servers may run.
---@param params turnstoned.McpTrustRequestParams
---@param respond fun(result: table)
function M.request(params, respond)
  local where = vim.fn.fnamemodify(params.configPath, ':~')
  ask('trust:' .. params.hash, ('Start the MCP servers of %s?'):format(where), {
    { id = 'trust', label = 'Trust this file (its servers start now)' },
    { id = 'deny', label = 'Deny (never ask about this version again)' },
    { id = 'dismiss', label = 'Not now (ask at the next session)' },
  }, M.describe(params), 'dismiss', respond)
end

--- The daemon asks whether a workspace's policies file may allow calls.
---@param params turnstoned.PolicyTrustRequestParams
---@param respond fun(result: table)
function M.policy_request(params, respond)
  local where = vim.fn.fnamemodify(params.configPath, ':~')
  ask('policy-trust:' .. params.hash, ('Let the allow rules of %s run calls unasked?'):format(where), {
    { id = 'trust', label = 'Trust this file (its allow rules apply)' },
    { id = 'deny', label = 'Deny (never ask about this version again)' },
    { id = 'dismiss', label = 'Not now (ask at the next session)' },
  }, M.describe_policies(params), 'dismiss', respond)
end

--- The project config a server comes from, if any.
---@param server turnstoned.McpServerInfo
---@return string?
function M.project_file(server)
  return server.origin and server.origin:match('^project:(.+)$')
end

--- The two kinds of project file: how to trust one, what trusting it does, what the
--- answer lists.
local KINDS = {
  mcp = { method = methods.mcp_server_trust, effect = 'start its servers', list = function(result)
    return vim.tbl_map(function(s)
      return ('%s %s'):format(s.name, s.status)
    end, result.servers or {})
  end },
  policies = { method = methods.policy_trust, effect = 'let its allow rules apply', list = function(result)
    return vim.tbl_map(function(pol)
      return ('%s %s'):format(pol.action, pol.active == false and 'inactive' or 'active')
    end, result.policies or {})
  end },
}

---@param kind 'mcp'|'policies'
---@param path string
---@param trusted boolean
---@param hash? string
local function set_trust(kind, path, trusted, hash)
  local k = KINDS[kind]
  client.request(k.method, { configPath = path, trusted = trusted, hash = hash }, function(err, result)
    if err then
      return vim.notify('turnstoned: ' .. err.message, vim.log.levels.ERROR)
    end
    local listed = k.list(result)
    vim.notify(('turnstoned: %s %s%s'):format(trusted and 'trusted' or 'revoked', path,
      #listed > 0 and (': ' .. table.concat(listed, ', ')) or ''))
  end)
end

--- Trust a project file after showing it as it is on disk (the hash pins that content).
---@param path string
---@param kind? 'mcp'|'policies' (default 'mcp')
function M.trust_file(path, kind)
  kind = kind or 'mcp'
  local file = io.open(path, 'rb')
  if not file then
    return vim.notify('turnstoned: cannot read ' .. path, vim.log.levels.ERROR)
  end
  local text = file:read('*a')
  file:close()
  local lines = vim.list_extend({ path, '' }, vim.split(text, '\n', { plain = true }))
  local where = vim.fn.fnamemodify(path, ':~')
  ask('trust-file:' .. path, ('Trust %s and %s?'):format(where, KINDS[kind].effect), {
    { id = 'trust', label = 'Trust this file as shown' },
    { id = 'cancel', label = 'Cancel' },
  }, lines, 'cancel', function(answer)
    if answer.decision == 'trust' then
      set_trust(kind, path, true, vim.fn.sha256(text))
    end
  end)
end

--- Forget that a project file was trusted (an MCP config's servers stop).
---@param path string
---@param kind? 'mcp'|'policies' (default 'mcp')
function M.revoke_file(path, kind)
  set_trust(kind or 'mcp', path, false)
end

--- Answer the daemon's trust questions (called once, on first use).
function M.wire()
  client.on_request(methods.mcp_server_request_trust, M.request)
  client.on_request(methods.policy_request_trust, M.policy_request)
end

return M
