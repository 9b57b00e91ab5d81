// Drives the workbench of code-server in headless Chromium through what a new user does:
// open the chat, ask for an edit, review it in the diff editor and add a line to the proposal,
// approve, see the file change and the turn's changes, interrupt a long command, reload the
// window and find the session again, compact the conversation, look at a preview the model
// opened, change the chat's approval mode from the status bar, and have the model edit text
// not saved yet (the prompt carries the editor state; the document reloads with the edit).
// Usage: node drive.mjs WORKBENCH_URL PROJECT_DIR ARTIFACT_DIR MESSAGE_LOG
import * as fs from "node:fs";
import * as path from "node:path";
import { chromium } from "playwright-core";

const [url, project, artifacts, messageLog] = process.argv.slice(2);
const TIMEOUT = 30_000;
fs.mkdirSync(artifacts, { recursive: true });
const shots = [];

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
page.setDefaultTimeout(TIMEOUT);

async function shot(name, what) {
  const file = path.join(artifacts, `${name}.png`);
  await page.screenshot({ path: file });
  shots.push(`${name}.png: ${what}`);
  console.log(`screenshot ${name}.png: ${what}`);
}

/** The chat webview's document (VS Code nests it in two iframes). */
function chat() {
  return page.frameLocator("iframe.webview.ready").frameLocator("iframe#active-frame");
}

async function until(what, check, ms = TIMEOUT) {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await page.waitForTimeout(100);
  }
}

async function openChat() {
  await page.locator(".monaco-workbench").waitFor({ timeout: 60_000 });
  await page.locator('.activitybar .action-item a[aria-label^="turnstoned"]').first().waitFor();
  await runCommand("turnstoned: Open Chat");
  await chat().locator("#input").waitFor();
}

async function ask(text) {
  await chat().locator("#input").fill(text);
  await chat().locator("#input").press("Enter");
}

async function runCommand(title) {
  await page.mouse.move(900, 500); // no hover tooltip left over the chat in screenshots
  const row = page.locator(`.quick-input-list .monaco-list-row[aria-label*="${title}"]`).first();
  // Right after a (re)load the palette may open before the extension's commands are known.
  await until(`the command ${title}`, async () => {
    await page.keyboard.press("F1");
    await page.locator(".quick-input-widget input").fill(`>${title}`);
    if (await row.isVisible({ timeout: 1000 }).catch(() => false)) return true;
    await row.waitFor({ timeout: 2000 }).catch(() => undefined);
    if (await row.isVisible()) return true;
    await page.keyboard.press("Escape");
    return false;
  });
  await row.click();
}

try {
  // 1. The chat opens and the daemon is up (the status bar names the model).
  await page.goto(url);
  await openChat();
  await page.locator('.statusbar-item:has-text("scripted · MCP 1/1")').first().waitFor();
  // The machine setting's mode, not the workspace's full-access: in the status bar and the header.
  await page.locator('.statusbar-item:has-text("Read-only")').first().waitFor();
  await until("the header's mode", async () => (await chat().locator("#mode").inputValue().catch(() => "")) === "read-only");
  await shot("e2e-01-chat-open", "the turnstoned chat view; the status bar: daemon up, the model from settings, 1 of 1 MCP servers connected, the approval mode");

  // 2. Ask for an edit. The first session in this folder finds its .mcp.json: a modal shows
  // exactly what would run before anything does.
  await ask("Change the greeting in app.py to say hello");
  const dialog = page.locator(".monaco-dialog-box");
  await dialog.waitFor();
  const said = await dialog.innerText();
  for (const part of ["project-tools", "everything.py --name project-tools", "PROJECT_TOKEN", "Trust and Start"]) {
    if (!said.includes(part)) throw new Error(`the trust dialog does not show ${part}: ${said}`);
  }
  await shot("e2e-02-mcp-trust", "the project's .mcp.json asks first: a modal with the exact command and the variables it would read");
  await dialog.locator('.monaco-button:has-text("Trust and Start")').click();
  await page.locator('.statusbar-item:has-text("MCP 2/2")').first().waitFor();
  const review = chat().locator(".approval button[data-action=review]");
  await review.waitFor();
  await shot("e2e-03-edit-approval", "the edit_file card: proposed diff, Review / Approve / Always / Deny");

  // 3. Review opens VS Code's diff editor; approve from its title bar.
  await review.click();
  await page.locator(".monaco-diff-editor").first().waitFor();
  const approveAction = page.locator('.editor-actions .action-label[aria-label="Approve This Edit"]').first();
  await approveAction.waitFor();
  // The proposed side is editable: a line added there is written with the model's change.
  await page.locator(".monaco-diff-editor .editor.modified .view-lines").first().click();
  await page.keyboard.press("Control+End");
  await page.keyboard.type("# reviewed in the diff editor");
  await page.locator('.monaco-diff-editor .editor.modified .view-lines:has-text("# reviewed in the diff editor")').first().waitFor();
  await shot("e2e-04-diff-review", "the proposal in the native diff editor, a line added to its proposed side; Approve / Deny in its title bar");
  await approveAction.click();
  const file = path.join(project, "app.py");
  await until("app.py to change", () => fs.readFileSync(file, "utf8").includes("return 'hello'"));
  if (!fs.readFileSync(file, "utf8").includes("# reviewed in the diff editor")) throw new Error(`app.py lacks the line added in the review: ${fs.readFileSync(file, "utf8")}`);
  await chat().locator(".entry.agent:not(.streaming) .code").waitFor();
  await until("the diff editor to close", async () => (await page.locator(".monaco-diff-editor").count()) === 0, 10_000);
  await page.keyboard.press("Control+P");
  await page.locator(".quick-input-widget input").fill("app.py");
  await page.locator(".quick-input-list .monaco-list-row").first().click();
  await page.locator('.view-lines:has-text("hello")').first().waitFor();
  await shot("e2e-05-file-changed", "approved: app.py changed on disk (open in the editor), the answer with a code block");

  // Put the selection (with its path and line range) into the next prompt.
  await page.locator(".monaco-editor .view-lines").first().click();
  await page.keyboard.press("Control+Home");
  await page.keyboard.press("Shift+ArrowDown");
  await page.keyboard.press("Shift+ArrowDown");
  await runCommand("turnstoned: Add Selection to Chat");
  const chip = chat().locator("#attachments .chip:not(.editor-chip)");
  await chip.waitFor();
  // What of the editor goes with the next prompt, from VS Code's own active editor.
  await chat().locator('#attachments .editor-chip:has-text("app.py: lines 1-2")').waitFor();
  if (!(await chip.innerText()).startsWith("app.py:1-2")) throw new Error(`chip: ${await chip.innerText()}`);
  await shot("e2e-06-add-selection", "Add Selection to Chat: lines 1-2 of app.py wait as a chip for the next prompt");
  await chip.locator("button").click();
  await runCommand("turnstoned: Add File to Chat");
  await chat().locator('#attachments .chip:not(.editor-chip):has-text("app.py")').waitFor();
  await chat().locator("#attachments .chip:not(.editor-chip) button").click();

  // The turn's changes: app.py, its diff before the turn ↔ now in the diff editor.
  const changed = chat().locator('.entry.changes li.changed-file:has-text("app.py")');
  await changed.waitFor();
  await changed.locator("button[data-action=showChange]").click();
  await page.locator('.tab:has-text("before the turn")').first().waitFor();
  await page.locator('.monaco-diff-editor .editor.original .view-lines:has-text("return \'hi\'")').first().waitFor();
  await shot("e2e-06b-turn-changes", "the turn's changes under its answer (Diff / Keep / Undo, Undo turn); app.py before the turn beside the file now");

  // 4. A long command: approve, watch its live output, interrupt it.
  await ask("Run the slow build");
  await chat().locator(".approval button[data-action=approve]").click();
  await chat().locator('.entry.tool.status-running details.output pre:has-text("step 2")').waitFor();
  await shot("e2e-07-long-command", "the bash card streaming live output; Stop is offered");
  await chat().locator("#stop").click();
  await chat().locator('.entry.notice:has-text("Interrupted.")').waitFor();
  await chat().locator('.entry.tool.status-cancelled').waitFor();
  await shot("e2e-08-interrupted", "interrupted: the command was cancelled and the turn ended");

  // 5. Reload the window: the session comes back with its history, and goes on.
  await page.reload();
  await openChat();
  await chat().locator('.entry.user:has-text("Change the greeting")').waitFor();
  await chat().locator(".entry.tool").first().waitFor();
  const sessionsHeader = page.locator('.pane-header:has-text("Sessions")').first();
  if ((await sessionsHeader.getAttribute("aria-expanded")) === "false") await sessionsHeader.click();
  await page.locator('.monaco-list-row:has-text("Change the greeting")').first().waitFor();
  await shot("e2e-09-after-reload", "after a window reload: the session resumed with its history; the Sessions tree lists it");
  await ask("Thanks!");
  await chat().locator('.entry.agent:has-text("You\'re welcome")').waitFor();
  await shot("e2e-10-resumed-turn", "a new turn in the resumed session");

  // The protocol trace in the output channel (turnstoned.trace.server is "messages" here).
  await runCommand("turnstoned: Show Output");
  await page.locator('.output-view .view-lines:has-text("daemon ready")').first().waitFor().catch(() => undefined);
  await page.locator('.panel input[placeholder="Filter"]').first().fill("turn/start");
  await page.locator(`.output-view .view-lines:has-text("Sending request 'turn/start")`).first().waitFor();
  await shot("e2e-11-output-trace", "the turnstoned output channel: the daemon's log and the JSON-RPC trace");
  await page.keyboard.press("Escape");

  // 6. MCP servers at a glance; picking one refreshes it. (The reload restarted the daemon:
  // its server connects again in the background, and the status bar says when.)
  await page.locator('.statusbar-item:has-text("MCP 2/2")').first().waitFor();
  await runCommand("turnstoned: MCP Servers");
  const server = page.locator('.quick-input-list .monaco-list-row:has-text("project-tools")').first();
  await server.waitFor();
  if (!/connected · \d+ tools, \d+ resources?, \d+ prompts?/.test(await server.innerText())) throw new Error(`MCP row: ${await server.innerText()}`);
  await shot("e2e-12-mcp", "the MCP servers quick pick: status and tool/resource/prompt counts");
  await server.click();
  await page.locator('.notifications-toasts:has-text("project-tools: unchanged")').first().waitFor();

  // 7. Compact the conversation on demand: a divider in the chat, the summary folded under it.
  await runCommand("turnstoned: Compact Conversation");
  const divider = chat().locator(".entry.compaction .divider");
  await divider.waitFor();
  if (!/^Context compacted \(manual\) · /.test(await divider.innerText())) throw new Error(`divider: ${await divider.innerText()}`);
  await chat().locator(".entry.compaction summary").click();
  await chat().locator('.entry.compaction .md:has-text("interrupted a slow build")').waitFor();
  await shot("e2e-13-compacted", "Compact Conversation: a divider with the context before and after, the summary the model now reads");

  // 8. The model opens a preview: a panel beside the chat renders it (the chat's webview is
  // the first, the panel's the second).
  await ask("Show me the release notes");
  const preview = page.frameLocator("iframe.webview.ready >> nth=1").frameLocator("iframe#active-frame");
  await preview.locator('.md h1:has-text("Release notes")').waitFor();
  await preview.locator(".md table td").first().waitFor();
  await page.locator('.tab:has-text("Release notes")').first().waitFor();
  await shot("e2e-14-preview", "a preview the model opened (open_preview of NOTES.md): rendered markdown in a panel beside the editor");

  // 9. The approval mode from the status bar: a quick pick of the modes; the header follows.
  await page.locator('.statusbar-item:has-text("Read-only")').first().click();
  const auto = page.locator('.quick-input-list .monaco-list-row:has-text("Auto")').first();
  await auto.waitFor();
  await shot("e2e-15-approval-mode", "the approval modes, from the status bar: what each runs without asking");
  await auto.click();
  await page.locator('.statusbar-item:has-text("Auto")').first().waitFor();
  // The chat's webview is the first of the two now open.
  const chatPage = page.frameLocator("iframe.webview.ready >> nth=0").frameLocator("iframe#active-frame");
  await until("the header's mode", async () => (await chatPage.locator("#mode").inputValue()) === "auto");

  // 10. Text not saved yet: the prompt carries the editor state, the model's edit is made to the
  // unsaved text, and the editor reloads from the disk (the text and the edit, nothing to save).
  await page.keyboard.press("Control+P");
  await page.locator(".quick-input-widget input").fill("app.py");
  await page.locator(".quick-input-list .monaco-list-row").first().click();
  const editor = page.locator('.editor-group-container.active .monaco-editor:not(.monaco-diff-editor *) .view-lines').first();
  await editor.click();
  await page.keyboard.press("Control+End");
  await page.keyboard.press("Enter");
  await page.keyboard.type("unsaved = 1");
  await page.locator('.tab.dirty:has-text("app.py")').first().waitFor();
  await chatPage.locator('#attachments .editor-chip:has-text("app.py")').waitFor();
  await chatPage.locator("#input").fill("Make the unsaved value 2");
  await chatPage.locator("#input").press("Enter");
  await until("the edit on disk", () => fs.readFileSync(file, "utf8").includes("unsaved = 2"));
  if (!fs.readFileSync(file, "utf8").includes("# reviewed in the diff editor")) throw new Error(`app.py lost its text: ${fs.readFileSync(file, "utf8")}`);
  await until("the document reloaded", async () => (await page.locator('.tab.dirty:has-text("app.py")').count()) === 0);
  await page.locator('.view-lines:has-text("unsaved = 2")').first().waitFor();
  await chatPage.locator('.entry.agent:has-text("not saved yet")').waitFor();
  const sent = fs.readFileSync(messageLog, "utf8").trim().split("\n").map((l) => JSON.parse(l));
  const prompt = sent.at(-2).messages.filter((m) => m.role === "user").map((m) => JSON.stringify(m.content)).find((c) => c.includes("Make the unsaved value 2")) ?? "";
  for (const part of ["[Editor state", "Active file: app.py (python)", "unsaved changes"]) {
    if (!prompt.includes(part)) throw new Error(`the prompt lacks ${part}: ${prompt}`);
  }
  await shot("e2e-16-unsaved-edit", "the model edited text not saved yet (its prompt carried the editor state): the file holds both, the editor reloaded with nothing to save");
} catch (err) {
  await page.screenshot({ path: path.join(artifacts, "e2e-failure.png") }).catch(() => undefined);
  console.error(`failed: ${err instanceof Error ? err.stack : String(err)} (see e2e-failure.png)`);
  // What the user would have seen, for a run whose screenshot is out of reach.
  const seen = async (what, locator) => console.error(`${what}:\n${(await locator.innerText({ timeout: 2000 }).catch(() => "(not readable)")).slice(-3000)}`);
  await seen("the chat", chat().locator("body"));
  await seen("the status bar", page.locator(".statusbar").first());
  await seen("the notifications", page.locator(".notifications-toasts").first());
  process.exitCode = 1;
} finally {
  await browser.close();
}
if (!process.exitCode) console.log(`all steps passed; ${shots.length} screenshots in ${artifacts}`);
