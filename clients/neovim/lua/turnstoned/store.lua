--- What the plugin remembers between Neovim runs, per workspace: a small JSON file under
--- `stdpath('data')/turnstoned/` (the model chosen for a workspace's new sessions).
local M = {}

---@return string
function M.path()
  return vim.fs.joinpath(vim.fn.stdpath('data') --[[@as string]], 'turnstoned', 'workspaces.json')
end

---@return table<string, table>
local function read()
  local ok, lines = pcall(vim.fn.readfile, M.path())
  if not ok or #lines == 0 then
    return {}
  end
  local decoded_ok, data = pcall(vim.json.decode, table.concat(lines, '\n'))
  return decoded_ok and type(data) == 'table' and data or {}
end

--- What is remembered for a workspace under `key`.
---@param workspace string absolute directory
---@param key string
---@return any
function M.get(workspace, key)
  local entry = read()[workspace]
  return type(entry) == 'table' and entry[key] or nil
end

--- Remember `value` for a workspace under `key` (nil forgets it). Written at once: another
--- Neovim may read it next.
---@param workspace string
---@param key string
---@param value any
---@return boolean ok, string? err
function M.set(workspace, key, value)
  local data = read()
  local entry = type(data[workspace]) == 'table' and data[workspace] or {}
  entry[key] = value
  data[workspace] = next(entry) and entry or nil
  local file = M.path()
  pcall(vim.fn.mkdir, vim.fs.dirname(file), 'p')
  local tmp = file .. '.tmp' .. vim.uv.os_getpid()
  local ok, err = pcall(vim.fn.writefile, { vim.json.encode(data) }, tmp)
  if not ok then
    return false, tostring(err)
  end
  local renamed, rerr = vim.uv.fs_rename(tmp, file)
  if not renamed then
    pcall(vim.fn.delete, tmp)
    return false, rerr
  end
  return true
end

return M
