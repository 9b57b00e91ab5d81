--- Project MCP configs: a repository's `.mcp.json` starts its servers only once you trust
--- that exact file. The daemon asks when a session opens there; `:TurnstonedMcp` trusts or
--- revokes on demand. Either way you see what would run before you answer.
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
  vim.wo[win][0].winbar = ' turnstoned: what this project config would run'
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

--- The project config a server comes from, if any.
---@param server turnstoned.McpServerInfo
---@return string?
function M.project_file(server)
  return server.origin and server.origin:match('^project:(.+)$')
end

---@param path string
---@param trusted boolean
---@param hash? string
local function set_trust(path, trusted, hash)
  client.request(methods.mcp_server_trust, { configPath = path, trusted = trusted, hash = hash },
    function(err, result)
      if err then
        return vim.notify('turnstoned: ' .. err.message, vim.log.levels.ERROR)
      end
      local states = vim.tbl_map(function(s)
        return ('%s %s'):format(s.name, s.status)
      end, result.servers or {})
      vim.notify(('turnstoned: %s %s%s'):format(trusted and 'trusted' or 'revoked', path,
        #states > 0 and (': ' .. table.concat(states, ', ')) or ''))
    end)
end

--- Trust a project config after showing it as it is on disk (the hash pins that content).
---@param path string
function M.trust_file(path)
  local file = io.open(path, 'rb')
  if not file then
    return vim.notify('turnstoned: cannot read ' .. path, vim.log.levels.ERROR)
  end
  local text = file:read('*a')
  file:close()
  local lines = vim.list_extend({ path, '' }, vim.split(text, '\n', { plain = true }))
  ask('trust-file:' .. path, ('Trust %s and start its servers?'):format(vim.fn.fnamemodify(path, ':~')), {
    { id = 'trust', label = 'Trust this file as shown' },
    { id = 'cancel', label = 'Cancel' },
  }, lines, 'cancel', function(answer)
    if answer.decision == 'trust' then
      set_trust(path, true, vim.fn.sha256(text))
    end
  end)
end

--- Stop a project config's servers and forget that it was trusted.
---@param path string
function M.revoke_file(path)
  set_trust(path, false)
end

--- Answer the daemon's trust questions (called once, on first use).
function M.wire()
  client.on_request(methods.mcp_server_request_trust, M.request)
end

return M
