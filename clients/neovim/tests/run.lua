-- Run the specs: `nvim -l tests/run.lua [spec.lua ...]` (default: every tests/spec/*_spec.lua).
-- Each spec runs in its own headless Neovim with the plugin directory on 'runtimepath' and
-- no setup() call, the way a plugin manager installs it, and with its own state directories.
local here = vim.fs.dirname(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p'))
local plugin = vim.fs.dirname(here)
local specs = #arg > 0 and arg or vim.fn.glob(here .. '/spec/*_spec.lua', false, true)
local jobs = tonumber(vim.env.TURNSTONED_TEST_JOBS or '2') or 2
local timeout_ms = 300000

local state = vim.fn.tempname()
local env = {
  XDG_CONFIG_HOME = state .. '/config',
  XDG_DATA_HOME = state .. '/data',
  XDG_STATE_HOME = state .. '/state',
  XDG_CACHE_HOME = state .. '/cache',
}

local started = vim.uv.hrtime()
local running, results, next_spec = 0, {}, 1

local function launch(spec)
  running = running + 1
  local t0 = vim.uv.hrtime()
  vim.system({ vim.v.progpath, '--clean', '--cmd', 'set rtp^=' .. plugin, '-l', spec },
    { text = true, env = env, timeout = timeout_ms }, function(obj)
      results[#results + 1] = { spec = spec, obj = obj, ms = (vim.uv.hrtime() - t0) / 1e6 }
      running = running - 1
    end)
end

while next_spec <= #specs or running > 0 do
  while running < jobs and next_spec <= #specs do
    launch(vim.fn.fnamemodify(specs[next_spec], ':p'))
    next_spec = next_spec + 1
  end
  vim.wait(timeout_ms, function()
    return running < jobs and next_spec <= #specs or (next_spec > #specs and running == 0)
  end, 20)
end

local failed = 0
table.sort(results, function(a, b)
  return a.spec < b.spec
end)
for _, r in ipairs(results) do
  local ok = r.obj.code == 0 and (r.obj.signal or 0) == 0
  failed = failed + (ok and 0 or 1)
  io.stdout:write(('%s %s (%.1f s)\n'):format(ok and 'PASS' or 'FAIL', vim.fn.fnamemodify(r.spec, ':t'),
    r.ms / 1000))
  io.stdout:write(r.obj.stdout or '')
  if not ok then
    io.stdout:write(r.obj.stderr or '', r.obj.signal ~= 0 and ('signal ' .. r.obj.signal .. '\n') or '')
  end
end
io.stdout:write(('%d spec files, %d failed, %.1f s\n'):format(#results, failed,
  (vim.uv.hrtime() - started) / 1e9))
vim.fn.delete(state, 'rf')
os.exit(failed == 0 and 0 or 1)
