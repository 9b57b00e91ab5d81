--- The connection to the daemon: `vim.lsp.rpc.start` over its stdio.
---
--- Not a `vim.lsp.start` client: the daemon serves no buffer, and an LSP client is made to
--- attach to buffers (Neovim 0.10 always attaches one), which would fire the user's
--- `LspAttach` setup on it and list it among the buffer's language servers. The raw RPC
--- client gives the same framing, and its server-request dispatcher runs in a coroutine, so
--- an approval can wait for `vim.ui.select` without blocking the editor.
local log = require('turnstoned.log')

local methods = require('turnstoned.protocol').methods
local error_codes = require('turnstoned.protocol').error_codes
local M = {}

---@alias turnstoned.ClientState 'stopped'|'starting'|'ready'|'failed'

---@class turnstoned.ClientInfo
---@field state turnstoned.ClientState
---@field error? string
---@field server_info? table
---@field protocol_version? integer
---@field protocol_revision? string
---@field methods? string[]

local state = 'stopped' ---@type turnstoned.ClientState
local rpc ---@type vim.lsp.rpc.PublicClient?
local init_result ---@type table?
local start_error ---@type string?
local waiting = {} ---@type fun(err?: string)[]
local listeners = {} ---@type table<string, fun(params: table)[]>
local request_handlers = {} ---@type table<string, fun(params: table, respond: fun(result?: table, err?: turnstoned.RpcError), request: turnstoned.DaemonRequest)>
---@type table<string|integer, {method: string, withdrawn?: fun()}>  daemon requests not answered yet, by id
local open_requests = {}
local id_unknown_told = false
local exit_listeners = {} ---@type fun(code: integer)[]
local generation = 0
local shared = false -- the connection goes to the resident daemon (through `turnstoned attach`)

--- Call `fn(params)` for every `method` notification from the daemon.
---@param method string
---@param fn fun(params: table)
function M.on(method, fn)
  listeners[method] = listeners[method] or {}
  table.insert(listeners[method], fn)
end

---@class turnstoned.DaemonRequest
---@field id? string|integer  its JSON-RPC id (nil when it could not be read)
---@field on_withdraw fun(fn: fun())  run `fn` if the daemon withdraws it (`$/cancelRequest`)

--- Answer the daemon's `method` requests: `handler(params, respond, request)` calls
--- `respond(result)` once, now or later; `respond(nil, {code, message})` answers with a
--- JSON-RPC error. `request.on_withdraw(fn)` runs `fn` when the daemon withdraws it.
---@param method string
---@param handler fun(params: table, respond: fun(result?: table, err?: turnstoned.RpcError), request: turnstoned.DaemonRequest)
function M.on_request(method, handler)
  request_handlers[method] = handler
end

--- Call `fn(code)` when the daemon process ends unexpectedly.
---@param fn fun(code: integer)
function M.on_exit(fn)
  table.insert(exit_listeners, fn)
end

---@param method string
---@param params table
local function emit(method, params)
  for _, fn in ipairs(listeners[method] or {}) do
    local ok, err = pcall(fn, params)
    if not ok then
      log.error('handler of %s failed: %s', method, err)
    end
  end
end

--- Run the listeners of a notification as if the daemon had just sent it (one replayed in
--- an answer: the running turn of `session/resume`).
---@param method string
---@param params? table
function M.dispatch(method, params)
  emit(method, params or {})
end

---@param err? string
local function settle(err)
  local fns = waiting
  waiting = {}
  for _, fn in ipairs(fns) do
    fn(err)
  end
end

--- The JSON-RPC id of the daemon request being dispatched. `vim.lsp.rpc` hands its
--- dispatcher the method and params only, so the id is read from the message the
--- dispatching closure holds (`decoded`); nil if Neovim's internals no longer have it.
---@param method string
---@return string|integer?
local function request_id(method)
  for level = 3, 10 do
    local info = debug.getinfo(level, 'f')
    if not info then
      return nil
    end
    for i = 1, 64 do
      local name, value = debug.getupvalue(info.func, i)
      if not name then
        break
      end
      if name == 'decoded' and type(value) == 'table' and value.method == method and value.id ~= nil then
        return value.id
      end
    end
  end
end

--- The daemon asked something: run its handler and wait (yielding this coroutine, which
--- `vim.lsp.rpc` created for the request) until it responds.
---@param method string
---@param params table
local function server_request(method, params)
  local handler = request_handlers[method]
  if not handler then
    log.warn('daemon request %s has no handler', method)
    return nil, vim.lsp.rpc.rpc_response_error(vim.lsp.protocol.ErrorCodes.MethodNotFound)
  end
  local co, is_main = coroutine.running()
  if not co or is_main then -- only a Lua without yieldable pcall gets here
    return nil, vim.lsp.rpc.rpc_response_error(vim.lsp.protocol.ErrorCodes.InternalError,
      'cannot wait for an answer outside a coroutine')
  end
  local id = request_id(method)
  local entry = { method = method }
  if id ~= nil then
    open_requests[id] = entry
  elseif not id_unknown_told then
    id_unknown_told = true
    log.warn('cannot read the id of the daemon request %s: a question the daemon withdraws stays open', method)
  end
  ---@type turnstoned.DaemonRequest
  local request = {
    id = id,
    on_withdraw = function(fn)
      entry.withdrawn = fn
    end,
  }
  local answer, failure, answered = nil, nil, false
  local function respond(result, err)
    if answered then
      return
    end
    if id ~= nil and open_requests[id] == entry then
      open_requests[id] = nil
    end
    answer, failure, answered = result, err, true
    if coroutine.status(co) == 'suspended' then
      local ok, e = coroutine.resume(co)
      if not ok then
        log.error('answering %s failed: %s', method, e)
      end
    end
  end
  local ok, err = pcall(handler, params or {}, respond, request)
  if not ok then
    log.error('handler of the daemon request %s failed: %s', method, err)
    respond(nil, { code = vim.lsp.protocol.ErrorCodes.InternalError, message = tostring(err) })
  end
  if not answered then
    coroutine.yield()
  end
  if failure then
    return nil, vim.lsp.rpc.rpc_response_error(failure.code, failure.message, failure.data)
  end
  return answer
end

---@param method string
---@param params table
local function notification(method, params)
  if method == methods.window_show_message then
    local levels = { vim.log.levels.ERROR, vim.log.levels.WARN, vim.log.levels.INFO }
    local level = levels[params.type] or vim.log.levels.INFO
    log.write(level >= vim.log.levels.WARN and 'warn' or 'info', 'daemon: %s', params.message)
    vim.notify(params.message, level, { title = 'turnstoned' })
  end
  log.debug('<- %s', method)
  if method == methods.cancel_request and params and params.id ~= nil then
    local entry = open_requests[params.id]
    open_requests[params.id] = nil
    if entry and entry.withdrawn then
      log.info('the daemon withdrew its %s request %s', entry.method, tostring(params.id))
      local ok, err = pcall(entry.withdrawn)
      if not ok then
        log.error('withdrawing %s failed: %s', entry.method, err)
      end
    end
  end
  emit(method, params or {})
end

local spawn ---@type fun(cmd: string[], fallback?: string[])

---@param gen integer
---@param code integer
---@param signal integer
---@param fallback? string[] the daemon's own command, when this was the shared daemon's bridge
local function on_exit(gen, code, signal, fallback)
  vim.schedule(function()
    if gen ~= generation then
      return
    end
    local was = state
    state, rpc = (code == 0 and 'stopped' or 'failed'), nil
    open_requests = {}
    start_error = code ~= 0 and ('the daemon exited with code %d (signal %d)'):format(code, signal)
      or nil
    log.write(code == 0 and 'info' or 'error', 'daemon exited: code %d, signal %d', code, signal)
    if was == 'starting' and fallback then
      log.warn('the shared daemon did not answer (turnstoned attach exited with code %d): '
        .. 'starting a daemon of this editor\'s own', code)
      return spawn(fallback)
    end
    if was == 'starting' then
      settle(start_error or 'the daemon exited during start')
    end
    for _, fn in ipairs(exit_listeners) do
      pcall(fn, code)
    end
  end)
end

--- The model this editor's settings name: `env` in the options, else Neovim's environment
--- (what a daemon the bridge starts would read). Nil fields: not set here.
---@return string? model, string? url
function M.wanted_model()
  local env = require('turnstoned.config').get().env
  local function read(name)
    local v = env[name] or vim.env[name]
    return v ~= '' and v or nil
  end
  return read('TURNSTONED_MODEL'), read('OPENAI_BASE_URL')
end

--- What to say when the shared daemon uses another model or server than this editor's
--- settings name (it keeps the environment of whoever started it), or nil when they agree.
---@param health table `daemon/health`'s answer
---@param model? string the model these settings name, nil when they name none
---@param url? string the server's URL these settings name
---@return string?
function M.mismatch(health, model, url)
  if not health.resident or type(health.model) ~= 'string' then
    return nil
  end
  local theirs = type(health.modelUrl) == 'string' and health.modelUrl or nil
  local function same(a, b)
    return (a or ''):gsub('/+$', '') == (b or ''):gsub('/+$', '')
  end
  if (not model or model == health.model) and (not url or same(url, theirs)) then
    return nil
  end
  return ('the shared daemon uses %s at %s, but your settings say %s at %s (it was started '
    .. 'with other settings): :Turnstoned restart stops it and starts one with yours, or set '
    .. 'share_daemon = false'):format(health.model, theirs or 'OpenAI', model or health.model,
      url or theirs or 'OpenAI')
end

--- Once the shared daemon answers: say so if it uses another model than these settings.
local function check_shared()
  local model, url = M.wanted_model()
  if not model and not url then
    return
  end
  M.request(methods.daemon_health, vim.empty_dict(), function(err, health)
    local said = not err and health and M.mismatch(health, model, url)
    if said then
      log.warn('%s', said)
      vim.notify('turnstoned: ' .. said, vim.log.levels.WARN)
    end
  end)
end

---@param result table
local function initialized(result)
  init_result = result
  state = 'ready'
  local caps = ((result.capabilities or {}).experimental or {}).turnstoned or {}
  log.info('daemon ready: %s %s, protocol %s', (result.serverInfo or {}).name or '?',
    (result.serverInfo or {}).version or '?', tostring(caps.protocolVersion))
  assert(rpc).notify(methods.initialized, vim.empty_dict())
  settle(nil)
end

--- Spawn the daemon and run `initialize`; `cb(err)` runs when it is ready or failed.
---@param cb? fun(err?: string)
function M.start(cb)
  if state == 'ready' then
    return cb and cb(nil)
  end
  if cb then
    table.insert(waiting, cb)
  end
  if state == 'starting' then
    return
  end
  local config = require('turnstoned.config').get()
  local daemon = require('turnstoned.install').daemon()
  if not daemon.found then
    local install = require('turnstoned.install')
    state, start_error = 'failed', install.not_found_message(daemon)
    log.error('%s', start_error)
    settle(start_error)
    if daemon.from == 'missing' then
      install.offer()
    end
    return
  end
  local attach = require('turnstoned.install').shared(daemon.cmd, config.share_daemon)
  log.info('the daemon: %s (%s)%s', table.concat(daemon.cmd, ' '), daemon.from,
    attach and ', shared' or '')
  spawn(attach or daemon.cmd, attach and daemon.cmd or nil)
end

--- Start `cmd` and run `initialize`; with `fallback` (the daemon's own command) `cmd` is the
--- shared daemon's bridge, and `fallback` starts instead if the bridge does not answer.
---@param cmd string[]
---@param fallback? string[]
spawn = function(cmd, fallback)
  local config = require('turnstoned.config').get()
  generation = generation + 1
  local gen = generation
  state, start_error, shared = 'starting', nil, fallback ~= nil
  log.info('starting the daemon: %s', table.concat(cmd, ' '))
  local ok, client = pcall(vim.lsp.rpc.start, cmd, {
    notification = notification,
    server_request = server_request,
    on_error = function(code, err)
      log.error('rpc error %s: %s', vim.lsp.rpc.client_errors[code] or code, vim.inspect(err))
    end,
    on_exit = function(code, signal)
      on_exit(gen, code, signal, fallback)
    end,
  }, { env = config.env })
  if not ok then
    if fallback then
      log.warn('cannot start the shared daemon (%s): starting a daemon of this editor\'s own', tostring(client))
      return spawn(fallback)
    end
    state, start_error = 'failed', tostring(client)
    log.error('cannot start the daemon: %s', start_error)
    return settle(start_error)
  end
  rpc = client
  client.request(methods.initialize, {
    processId = vim.uv.os_getpid(),
    clientInfo = { name = 'Neovim', version = tostring(vim.version()) },
    rootUri = vim.NIL,
    capabilities = vim.empty_dict(),
    -- The editor/* requests the plugin answers (turnstoned.editor serves them).
    initializationOptions = {
      turnstoned = { editor = { diagnostics = true, openFiles = true, symbols = true, buffers = true } },
    },
  }, function(err, result)
    if gen ~= generation then
      return
    end
    if (err or not result) and fallback then
      log.warn('the shared daemon did not initialize (%s): starting a daemon of this editor\'s own', vim.inspect(err))
      client.terminate()
      return spawn(fallback)
    end
    if err or not result then
      state, start_error = 'failed', 'initialize failed: ' .. vim.inspect(err)
      log.error('%s', start_error)
      return settle(start_error)
    end
    initialized(result)
    if fallback then
      check_shared()
    end
  end)
end

---@class turnstoned.RpcError
---@field code integer
---@field message string
---@field data? table

--- Send a request (starting the daemon first if needed); `cb(err, result)`. Returns a
--- function that withdraws it: `$/cancelRequest` goes to the daemon (once the request is
--- sent) and `cb` gets a requestCancelled error at once. (|vim.lsp.rpc| drops the daemon's
--- own requestCancelled answer, and an answer that crossed the cancel is ignored: `cb` runs
--- once.)
---@param method string
---@param params? table
---@param cb? fun(err?: turnstoned.RpcError, result?: table)
---@return fun() cancel
function M.request(method, params, cb)
  local callback = cb or function(err)
    if err then
      log.error('%s failed: %s', method, err.message)
    end
  end
  local answered = false
  local function finish(err, result)
    if not answered then
      answered = true
      callback(err, result)
    end
  end
  log.debug('-> %s', method)
  local id, via, cancelled ---@type integer?, vim.lsp.rpc.PublicClient?, boolean?
  local function withdraw()
    if id ~= nil and via and not via.is_closing() then
      log.info('withdrawing %s (request %s)', method, tostring(id))
      via.notify(methods.cancel_request, { id = id })
    end
  end
  M.start(function(err)
    if cancelled then
      return
    elseif err then
      return finish({ code = -1, message = err })
    end
    local sent, msg_id = false, nil
    if rpc then
      via = rpc
      sent, msg_id = rpc.request(method, params or vim.empty_dict(), function(e, result)
        finish(e and { code = e.code, message = e.message or tostring(e), data = e.data } or nil, result)
      end)
    end
    if not sent then
      return finish({ code = -1, message = 'the daemon is not running' })
    end
    id = msg_id
  end)
  return function()
    if cancelled or answered then
      return
    end
    cancelled = true
    withdraw()
    finish({ code = error_codes.REQUEST_CANCELLED, message = method .. ' was cancelled' })
  end
end

--- Send a request and wait for its answer, at most `timeout_ms`.
---@param method string
---@param params? table
---@param timeout_ms? integer
---@return turnstoned.RpcError? err
---@return table? result
function M.request_sync(method, params, timeout_ms)
  local done, err, result = false, nil, nil
  M.request(method, params, function(e, r)
    done, err, result = true, e, r
  end)
  if not vim.wait(timeout_ms or 10000, function()
    return done
  end, 10) then
    return { code = -1, message = ('no answer to %s in %d ms'):format(method, timeout_ms or 10000) }
  end
  return err, result
end

---@return table? caps the daemon's turnstoned capabilities from `initialize`
local function capabilities()
  return init_result and ((init_result.capabilities or {}).experimental or {}).turnstoned
end

--- The daemon's protocol revision ("1.0" when it announces none).
---@return string?
local function revision()
  local caps = capabilities()
  return caps and (caps.protocolRevision or ('%d.0'):format(caps.protocolVersion or 1))
end

--- Where the connection stands.
---@return turnstoned.ClientInfo
function M.info()
  local caps = capabilities()
  return {
    state = state,
    error = start_error,
    server_info = init_result and init_result.serverInfo,
    protocol_version = caps and caps.protocolVersion,
    protocol_revision = revision(),
    methods = caps and caps.methods,
  }
end

--- Whether the running daemon speaks protocol revision `wanted` (e.g. "1.1") or later.
---@param wanted string
---@return boolean
function M.has_revision(wanted)
  local have = revision()
  return have ~= nil and vim.version.ge(have, wanted)
end

--- Whether the connection goes to the resident daemon that other clients share.
---@return boolean
function M.shared()
  return shared
end

--- `shutdown` then `exit`, waiting at most `timeout_ms` for the first.
---@param timeout_ms? integer
function M.stop(timeout_ms)
  local client = rpc
  if not client or client.is_closing() then
    return
  end
  generation = generation + 1
  state, rpc, init_result = 'stopped', nil, nil
  local done = false
  client.request(methods.shutdown, nil, function()
    done = true
  end)
  vim.wait(timeout_ms or 2000, function()
    return done
  end, 10)
  client.notify(methods.exit, nil)
  log.info('daemon stopped')
end

return M
