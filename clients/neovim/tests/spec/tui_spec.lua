-- A new user's session, typed into a real Neovim UI: Neovim runs in a :terminal of this
-- headless one, with the plugin on 'runtimepath', no setup() and no configuration (the
-- daemon is found on $PATH). The screens are kept as an artifact.
local H = dofile(vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2)) .. '/../helpers.lua')
local api = vim.api

local WIDTH, HEIGHT = 150, 40
vim.o.columns, vim.o.lines = WIDTH, HEIGHT + 2
local model = H.model()
local home = vim.fn.tempname()
local work = home .. '/project'
vim.fn.mkdir(work, 'p')
vim.fn.writefile({ 'version = 1' }, work .. '/settings.txt')
vim.fn.mkdir(work .. '/docs', 'p')
vim.fn.writefile({ '# A guide' }, work .. '/docs/guide.md')

local term_buf, job
local shots = {}

--- Start Neovim in a terminal window as the user would: `nvim` in the project directory.
local function start_nvim()
  term_buf = api.nvim_create_buf(false, true)
  api.nvim_open_win(term_buf, true, { relative = 'editor', width = WIDTH, height = HEIGHT, row = 0, col = 0 })
  job = vim.fn.jobstart({ vim.v.progpath, '--clean', '--cmd', 'set rtp^=' .. H.plugin_dir }, {
    term = true,
    cwd = work,
    env = {
      PATH = vim.fs.dirname(H.daemon) .. ':' .. vim.env.PATH,
      TURNSTONED_HOME = home,
      OPENAI_BASE_URL = model.base_url,
      OPENAI_API_KEY = 'sk-test',
      TURNSTONED_MODEL = 'scripted',
    },
  })
end

---@return string
local function screen()
  local lines = api.nvim_buf_get_lines(term_buf, 0, -1, false)
  return table.concat(vim.tbl_map(function(l)
    return (l:gsub('%s+$', ''))
  end, lines), '\n')
end

---@param text string
---@param timeout_ms? integer
local function see(text, timeout_ms)
  if not vim.wait(timeout_ms or 20000, function()
    return screen():find(text, 1, true) ~= nil
  end, 20) then
    error(('%q never showed on the screen:\n%s'):format(text, screen()), 2)
  end
end

---@param keys string
local function type_keys(keys)
  vim.fn.chansend(job, api.nvim_replace_termcodes(keys, true, false, true))
end

---@param title string
local function shot(title)
  shots[#shots + 1] = ('=== %s %s'):format(title, string.rep('=', WIDTH - #title - 5))
  -- Session ids differ from run to run; the artifact should not.
  shots[#shots + 1] = (screen():gsub('turnstoned://chat/%x+', 'turnstoned://chat/<session>'))
end

local function quit()
  type_keys('<Esc>:qa!<CR>')
  vim.wait(10000, function()
    return vim.fn.jobwait({ job }, 0)[1] ~= -1
  end, 20)
end

H.cleanup = function()
  pcall(quit)
  -- With no configuration the plugin shares the resident daemon, which outlives the editor.
  vim.system({ H.daemon, 'stop' }, { env = { TURNSTONED_HOME = home } }):wait(15000)
  vim.fn.writefile(vim.split(table.concat(shots, '\n'), '\n'), H.artifacts .. '/tui-session.txt')
  model.stop()
end

H.test('chat: the answer streams in beside the code window', function()
  start_nvim()
  see('~') -- the UI is up
  model.push({ text = 'Hello! I am the scripted model.\nAsk me anything about this project.' })
  type_keys(':Turnstoned<CR>')
  see(' prompt')
  type_keys('What is in settings.txt?<Esc><CR>') -- :Turnstoned leaves the prompt in Insert mode
  see('Ask me anything about this project.')
  see('turn ') -- the winbar shows the usage once the turn ended
  shot('the first answer')
end)

H.test('completion: @ and letters complete a path as you type, / the slash commands', function()
  type_keys('iSee @gui')
  see('docs/guide.md')
  shot('@ completes a path')
  type_keys('<C-y> too')
  see('See @docs/guide.md too')
  type_keys('<Esc>ggdGi/')
  see('Summarise the older part')
  shot('/ completes a slash command')
  type_keys('<C-e><Esc>ggdG')
end)

H.test('mode: :Turnstoned mode read-only, and the winbar says so', function()
  -- A new user's daemon runs commands in the sandbox unasked (auto): from here on it asks.
  type_keys(':Turnstoned mode read-only<CR>')
  see('mode read-only')
  shot('the mode in the winbar')
end)

H.test('approval: the default vim.ui.select asks, the command runs', function()
  model.push({ tool_calls = { { 'call-cat', 'bash', '{"command": "touch seen.txt; cat settings.txt"}' } } },
    { text = 'It says version = 1.' })
  type_keys('iShow it<C-s>')
  see('Type number and <Enter>')
  shot('an approval question')
  H.ok(screen():find('2: Always (allow bash:touch, bash:@read-only for this session)', 1, true), 'the choices:\n' .. screen())
  type_keys('1<CR>')
  see('It says version = 1.')
  see('📝 changes in this turn: 1 file') -- the turn ended (touch made a file)
  H.ok(screen():find('⚙ bash: touch seen.txt; cat settings.txt  [unsandboxed]  ✓', 1, true), 'the folded call:\n' .. screen())
end)

H.test('review: the diff tab shows the proposal; ga approves it', function()
  model.push({ tool_calls = { { 'call-w', 'write_file',
    vim.json.encode({ path = 'settings.txt', content = 'version = 2\n' }) } } },
    { text = 'Bumped the version.' })
  type_keys('iBump the version<C-s>')
  see('Type number and <Enter>')
  type_keys('4<CR>') -- Review diff
  see('proposed: ')
  H.ok(screen():find('version = 2', 1, true), 'the proposed text')
  shot('the review tab')
  type_keys('ga')
  see('Bumped the version.')
  see('modified  settings.txt') -- the changes block: the turn ended
  H.eq(vim.fn.readfile(work .. '/settings.txt'), { 'version = 2' }, 'the file on disk')
end)

H.test('interrupt: <C-c> stops a turn that is still streaming', function()
  model.push({ hang = 30, after_text = 'Let me think about this for a long' })
  type_keys('iThink hard<C-s>')
  see('for a long')
  type_keys('<C-c>')
  see('⊘ interrupted')
  shot('after an interrupt')
end)

H.test('resume: a new Neovim picks the session and its history is redrawn', function()
  quit()
  start_nvim()
  see('~')
  type_keys(':TurnstonedSessions<CR>')
  see('2: ')
  type_keys('2<CR>')
  see('Bumped the version.')
  H.ok(screen():find('What is in settings.txt?', 1, true), 'the first prompt:\n' .. screen())
  shot('a resumed session')
end)

H.test(':checkhealth turnstoned reports OK', function()
  type_keys(':checkhealth turnstoned<CR>')
  see('model configured: scripted')
  shot(':checkhealth turnstoned')
  H.ok(not screen():find('ERROR', 1, true), 'no error:\n' .. screen())
end)

H.run()
