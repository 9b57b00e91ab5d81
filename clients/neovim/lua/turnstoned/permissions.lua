--- `:TurnstonedGrants` and `:TurnstonedPolicies`: what the current session lets run without
--- asking (grants saved by "Always", and `[tools] auto_approve_tools`), and the tool
--- policies that allow, deny or ask first, with trust in the workspace's policies file.
local client = require('turnstoned.client')
local P = require('turnstoned.protocol')
local pickers = require('turnstoned.pickers')

local methods = P.methods
local M = {}

---@param msg string
---@param level? integer
local function notify(msg, level)
  vim.notify('turnstoned: ' .. msg, level or vim.log.levels.INFO)
end

--- The current chat's session id; nil (and a message why) before its first prompt.
---@return string?
local function session_id()
  local chat = require('turnstoned.session').peek()
  if not (chat and chat.sid) then
    notify('this chat has no session yet: send a prompt first (or resume one)')
    return nil
  end
  return chat.sid
end

---@param g turnstoned.GrantInfo
---@return string
function M.grant_label(g)
  return ('%-28s %s  [%s]'):format(g.rule, g.description, g.source == 'config' and 'config.toml' or 'this session')
end

---@param sid string
---@param g turnstoned.GrantInfo
local function revoke(sid, g)
  client.request(methods.grant_revoke, { sessionId = sid, rule = g.rule }, function(err)
    if err then
      return notify('cannot revoke ' .. g.rule .. ': ' .. err.message, vim.log.levels.ERROR)
    end
    notify(('revoked %s: its calls ask again'):format(g.rule))
  end)
end

--- The current session's grants; pick one to revoke it.
function M.grants()
  local sid = session_id()
  if not sid then
    return
  end
  client.request(methods.grant_list, { sessionId = sid }, function(err, result)
    if err then
      return notify('cannot list grants: ' .. err.message, vim.log.levels.ERROR)
    end
    local grants = result.grants or {}
    if #grants == 0 then
      return notify('this session has no grants: every call that asks, asks')
    end
    pickers.select(grants, 'turnstoned grants (what runs without asking)', 'turnstoned.grants', function(g)
      if not g then
        return
      elseif not g.revocable then
        return notify(('%s comes from [tools] auto_approve_tools in config.toml: remove it there'):format(g.rule))
      end
      pickers.select({
        { id = 'revoke', label = ('Revoke %s (its calls ask again)'):format(g.rule) },
        { id = 'keep', label = 'Keep it' },
      }, M.grant_label(g), 'turnstoned.grants', function(action)
        if action and action.id == 'revoke' then
          revoke(sid, g)
        end
      end)
    end, M.grant_label)
  end)
end

--- The choices of the policies picker: every policy, in the order they are tried, then
--- what can be done about the workspace's policies file.
---@param result turnstoned.PolicyListResult
---@return {label: string, policy?: turnstoned.PolicyInfo, trust?: string, revoke?: string}[]
function M.policy_choices(result)
  local trust = require('turnstoned.trust')
  local out = {}
  for _, pol in ipairs(result.policies or {}) do
    out[#out + 1] = { policy = pol, label = ('%s  [%s]'):format(trust.policy_line(pol), pol.origin) }
  end
  local file = result.workspaceFile
  if type(file) == 'table' then
    local where = vim.fn.fnamemodify(file.path, ':~')
    if type(file.problem) == 'string' then
      out[#out + 1] = { label = ('⚠ %s cannot be used: %s'):format(where, file.problem) }
    elseif file.decision == 'trusted' then
      out[#out + 1] = { revoke = file.path, label = ('Revoke trust in %s (its allow rules stop applying)'):format(where) }
    else
      out[#out + 1] = { trust = file.path, label = ('Trust %s (see it first)…'):format(where) }
    end
  end
  return out
end

--- The tool policies that apply to the current session; trust or revoke the workspace's file.
function M.policies()
  local sid = session_id()
  if not sid then
    return
  end
  client.request(methods.policy_list, { sessionId = sid }, function(err, result)
    if err then
      return notify('cannot list policies: ' .. err.message, vim.log.levels.ERROR)
    end
    local choices = M.policy_choices(result)
    if #choices == 0 then
      return notify('no tool policy applies to this session (see :help turnstoned-policies)')
    end
    local trust = require('turnstoned.trust')
    pickers.select(choices, 'turnstoned tool policies (tried in this order)', 'turnstoned.policies', function(c)
      if not c then
        return
      elseif c.trust then
        trust.trust_file(c.trust, 'policies')
      elseif c.revoke then
        trust.revoke_file(c.revoke, 'policies')
      elseif c.policy then
        notify(('%s\nfrom %s (#%d)'):format(trust.policy_line(c.policy), c.policy.origin, c.policy.index))
      end
    end)
  end)
end

return M
