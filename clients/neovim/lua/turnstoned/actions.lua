--- What a command and a slash command both do, and say: compacting the context and setting
--- the approval mode.
local config = require('turnstoned.config')
local session = require('turnstoned.session')

local M = {}

--- Compact the current chat's context now: older messages give way to a summary.
function M.compact()
  session.compact(function(err, result)
    if err then
      return vim.notify('turnstoned: cannot compact: ' .. err, vim.log.levels.ERROR)
    end
    local said = {
      compacted = 'compacted',
      scheduled = 'the running turn compacts at its next step',
      unchanged = 'nothing is old enough to compact yet',
    }
    vim.notify('turnstoned: ' .. (said[result.status] or result.status))
  end)
end

local MODE_SAYS = {
  ['read-only'] = 'reads run unasked; edits and commands ask',
  auto = 'edits and sandboxed commands run unasked; the rest asks',
  ['full-access'] = 'all but destructive, credential and outside-the-workspace calls run unasked',
  plan = 'the model investigates read-only and proposes a plan to approve',
}

--- Set the current chat's approval mode; without `mode`, pick one (`vim.ui.select`).
--- Before the chat has a session, it is the mode the session starts in.
---@param mode? turnstoned.ApprovalMode
function M.mode(mode)
  local modes = config.MODES
  if mode == nil then
    local now = session.mode(session.current())
    return vim.ui.select(modes, {
      prompt = 'turnstoned approval mode' .. (now and (' (now ' .. now .. ')') or ''),
      kind = 'turnstoned.mode',
      format_item = function(m)
        return ('%-12s %s'):format(m, MODE_SAYS[m])
      end,
    }, function(choice)
      if choice then
        M.mode(choice)
      end
    end)
  end
  if not vim.tbl_contains(modes, mode) then
    return vim.notify(('turnstoned: no approval mode %q (%s)'):format(mode, table.concat(modes, ', ')),
      vim.log.levels.ERROR)
  end
  session.set_mode(mode, function(err, result)
    if err then
      return vim.notify('turnstoned: cannot set the mode: ' .. err, vim.log.levels.ERROR)
    end
    ---@cast result turnstoned.SessionSetModeResult
    vim.notify(('turnstoned: approval mode %s (was %s)'):format(result.mode, result.previous or 'the default'))
  end)
end

return M
