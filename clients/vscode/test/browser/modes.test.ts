/**
 * The chat page in headless Chromium: the approval mode picker in the header, how a command
 * runs on its card, an escalation and a plan to approve, a turn's changes with their buttons,
 * an undo with Redo, and an earlier prompt edited and rerun; what each posts to the host.
 */
import * as path from "node:path";
import type { Page } from "playwright-core";
import { beforeEach, describe, expect, it } from "vitest";
import type { FromWebview, ToWebview } from "../../src/messages/chat";
import type { ToolCallItem } from "../../src/protocol";
import { browserRig, postAll } from "../support/page";

const ARTIFACTS = path.resolve(__dirname, "../artifacts");
const S = "session-1";
const base = { sessionId: S, turnId: "turn_1" };
const rig = browserRig();
let page: Page;
const problems: string[] = [];

beforeEach(async () => {
  problems.length = 0;
  page = await rig.browser.newPage({ viewport: { width: 420, height: 760 } });
  page.on("console", (m) => { if (m.type() === "error" || m.type() === "warning") problems.push(m.text()); });
  page.on("pageerror", (e) => problems.push(String(e)));
  await page.goto(rig.server.url);
  await page.waitForFunction(() => (window as unknown as { __posted: FromWebview[] }).__posted.some((m) => m.type === "ready"));
});

const send = (messages: ToWebview[]) => postAll(page, messages);
const posted = () => page.evaluate(() => (window as unknown as { __posted: FromWebview[] }).__posted);
const sentOf = async <T extends FromWebview["type"]>(type: T) => (await posted()).filter((m) => m.type === type);
const start: ToWebview[] = [
  { type: "daemon", state: "ready" },
  { type: "features", perCallDecisions: true, editReview: true, editArguments: true, approvalModes: true, checkpoints: true },
  { type: "reset", sessionId: S, title: "modes", items: [], running: false },
];
const started = (item: ToolCallItem): ToWebview => ({ type: "event", event: { method: "item/started", params: { ...base, itemId: item.id, item } } });
const completed = (item: ToolCallItem): ToWebview => ({ type: "event", event: { method: "item/completed", params: { ...base, itemId: item.id, item } } });

describe("chat page: approval modes, the sandbox, undo", () => {
  it("the header's mode picker: the mode and the sandbox shown, a pick posted, a change from the daemon followed", async () => {
    await send([...start, { type: "mode", mode: "read-only", pending: false, sandbox: { available: true, detail: "Landlock ABI 7 and seccomp" } }]);
    const select = page.locator("#chat-head select#mode");
    await select.waitFor();
    expect(await select.inputValue()).toBe("read-only");
    expect(await select.locator("option").allInnerTexts()).toEqual(["Read-only", "Auto", "Full access", "Plan"]);
    expect(await page.locator("#sandbox-state").innerText()).toBe("sandbox on");
    expect(await page.locator("#sandbox-state").getAttribute("title")).toContain("Landlock ABI 7");
    expect(await select.getAttribute("title")).toBe("Reads run unasked; edits and commands ask.");

    await select.selectOption("full-access");
    expect(await sentOf("setMode")).toEqual([{ type: "setMode", mode: "full-access" }]);
    // Until the host answers, the page shows what the daemon says; then the new mode and a notice.
    await send([{ type: "event", event: { method: "session/modeChanged", params: { sessionId: S, mode: "full-access", previous: "read-only" } } }]);
    expect(await select.inputValue()).toBe("full-access");
    expect(await page.locator(".entry.notice").innerText()).toContain("Approval mode: read-only → full-access");
    await page.screenshot({ path: path.join(ARTIFACTS, "chat-mode.png") });

    // A new chat with no mode set: the daemon's default, until its session says.
    await send([{ type: "reset", sessionId: null, title: "", items: [], running: false }, { type: "mode", mode: null, pending: true, sandbox: { available: false, detail: "no Landlock" } }]);
    expect(await select.inputValue()).toBe("");
    expect(await select.locator("option").first().innerText()).toBe("Default (config)");
    expect(await page.locator("#sandbox-state").innerText()).toBe("no sandbox");
    expect(await select.getAttribute("title")).toContain("The next chat starts in this mode");
    expect(problems).toEqual([]);
  });

  it("without approval modes (an older daemon) there is no header", async () => {
    await send([{ type: "features", perCallDecisions: true, editReview: true, editArguments: true }, { type: "mode", mode: "auto", pending: false, sandbox: null }]);
    expect(await page.locator("#chat-head").isHidden()).toBe(true);
  });

  it("how commands run: sandboxed and unsandboxed badges; an escalation's reason leads its approval", async () => {
    const touch: ToolCallItem = { type: "toolCall", id: "c1", callId: "c1", tool: "bash", header: "⚙ bash: touch x", preview: "touch x", needsApproval: false, status: "completed", isError: false, sandbox: "sandboxed", autoApproved: true, autoApproveReason: "auto: runs in the sandbox" };
    const curl: ToolCallItem = { type: "toolCall", id: "c2", callId: "c2", tool: "bash", header: "⚙ bash: curl -s https://example.org", preview: "curl -s https://example.org", needsApproval: true, status: "pending", isError: false, sandbox: "escalated" };
    const reason = "The sandbox stopped a network connection. The model's reason: it needs the page to check the link.";
    await send([...start, { type: "mode", mode: "auto", pending: false, sandbox: { available: true } }, started(touch), completed(touch), started(curl),
      { type: "approval", cycle: { ...base, cycleId: "k1", items: [{ callId: "c2", tool: "bash", header: curl.header!, preview: curl.preview!, needsApproval: true, approvalLabel: "bash", sandbox: "escalated", escalation: reason, grantRules: [] }] } }]);
    const cards = page.locator(".entry.tool");
    await cards.nth(1).locator(".approval").waitFor();
    expect(await cards.nth(0).locator(".card-head .sandbox").innerText()).toBe("sandboxed");
    expect(await cards.nth(0).locator(".card-head .sandbox").getAttribute("class")).toBe("sandbox sandbox-sandboxed");
    expect(await cards.nth(0).locator(".verdicts .auto").innerText()).toBe("ran without asking: auto: runs in the sandbox");
    expect(await cards.nth(1).locator(".card-head .sandbox").innerText()).toBe("outside the sandbox");
    const escalation = cards.nth(1).locator(".approval > .escalation");
    expect(await escalation.locator("strong").innerText()).toBe("Asks to run outside the sandbox");
    expect(await escalation.locator(".escalation-reason").innerText()).toBe(reason);
    // It leads the panel, before the buttons.
    expect(await cards.nth(1).locator(".approval").evaluate((n) => n.firstElementChild?.className)).toBe("escalation");
    await page.screenshot({ path: path.join(ARTIFACTS, "chat-sandbox.png") });

    const plain: ToolCallItem = { ...touch, id: "c3", callId: "c3", header: "⚙ bash: make", sandbox: "unsandboxed" };
    await send([completed(plain)]);
    expect(await cards.nth(2).locator(".card-head .sandbox").innerText()).toBe("unsandboxed");
    expect(problems).toEqual([]);
  });

  it("a plan reads as a plan: its markdown, Approve plan or Revise with what should change", async () => {
    const plan = "# Rename the greeting\n\n1. Change `hi` to `hello` in **app.py**\n2. Run the tests";
    const item: ToolCallItem = { type: "toolCall", id: "p1", callId: "p1", tool: "propose_plan", header: "📋 plan: Rename the greeting", preview: plan, needsApproval: true, status: "pending", isError: false };
    await send([...start, { type: "mode", mode: "plan", pending: false, sandbox: null }, started(item),
      { type: "approval", cycle: { ...base, cycleId: "k2", items: [{ callId: "p1", tool: "propose_plan", header: item.header!, preview: plan, needsApproval: true, approvalLabel: "propose_plan", grantRules: [] }] } }]);
    const card = page.locator(".entry.tool");
    await card.locator(".plan-approval").waitFor();
    expect(await card.locator(".plan .md h1").innerText()).toBe("Rename the greeting");
    expect(await card.locator(".plan .md li").allInnerTexts()).toEqual(["Change hi to hello in app.py", "Run the tests"]);
    expect(await card.locator("pre.preview").isHidden()).toBe(true);
    expect(await card.locator(".plan-question").innerText()).toContain("Approve this plan?");
    expect(await card.locator(".approval button").allInnerTexts()).toEqual(["Approve plan", "Revise"]);
    await page.screenshot({ path: path.join(ARTIFACTS, "chat-plan.png") });
    await card.locator(".feedback").fill("run the tests first");
    await card.locator("button[data-action=deny]").click();
    expect(await sentOf("answer")).toEqual([{ type: "answer", cycleId: "k2", answer: { decision: "deny", feedback: "run the tests first" } }]);
  });

  it("a turn's changes: Diff, Keep and Undo per file, Undo turn; an undo with Redo; Edit and rerun on the prompt", async () => {
    const files = [{ path: "/w/src/app.py", kind: "modify" as const }, { path: "/w/NOTES.md", kind: "create" as const }, { path: "/w/logo.png", kind: "modify" as const, binary: true }];
    await send([...start, { type: "mode", mode: "auto", pending: false, sandbox: { available: true } }, { type: "sent", text: "rename the greeting", queued: false, turnId: "turn_1" },
      { type: "event", event: { method: "turn/started", params: base } },
      { type: "event", event: { method: "item/completed", params: { ...base, itemId: "m1", item: { type: "agentMessage", id: "m1", text: "Done." } } } },
      { type: "event", event: { method: "turn/completed", params: { ...base, status: "completed", checkpoint: { files, undoable: true } } } }]);
    const changes = page.locator(".entry.changes");
    await changes.waitFor();
    expect(await changes.locator(".changes-title").innerText()).toBe("Changes in this turn · 3 files");
    const rows = changes.locator("li.changed-file");
    expect(await rows.locator(".file-name").allInnerTexts()).toEqual(["app.py", "NOTES.md", "logo.png"]);
    expect(await rows.nth(0).locator("button").allInnerTexts()).toEqual(["Diff", "Keep", "Undo"]);
    expect(await rows.nth(2).locator("button").allInnerTexts()).toEqual(["Keep", "Undo"]); // binary: no diff
    await page.screenshot({ path: path.join(ARTIFACTS, "chat-changes.png") });

    await rows.nth(0).locator("button[data-action=showChange]").click();
    await rows.nth(1).locator("button[data-action=keepFile]").click();
    await page.waitForFunction(() => document.querySelectorAll("li.changed-file.status-kept").length === 1);
    expect(await rows.nth(1).locator(".file-status").innerText()).toBe("kept");
    await rows.nth(0).locator("button[data-action=undoFile]").click();
    expect((await posted()).filter((m) => ["showChange", "undoFile", "keepFile"].includes(m.type))).toEqual([
      { type: "showChange", turnId: "turn_1", path: "/w/src/app.py" },
      { type: "undoFile", turnId: "turn_1", path: "/w/src/app.py" },
    ]);

    // The host says the file was undone: struck through, and an undo note with Redo.
    await send([{ type: "undone", undoId: "undo_1", turnIds: ["turn_1"], restored: ["/w/src/app.py"], kept: [], rewound: false, redone: false }]);
    expect(await rows.nth(0).getAttribute("class")).toBe("changed-file status-undone");
    expect(await rows.nth(0).locator(".file-status").innerText()).toBe("undone");
    const undo = page.locator(".entry.undo");
    expect(await undo.innerText()).toContain("Undid 1 turn: 1 file restored (app.py)");
    await undo.locator("button[data-action=redo]").click();
    expect(await sentOf("redo")).toEqual([{ type: "redo", undoId: "undo_1" }]);
    await send([{ type: "event", event: { method: "session/notice", params: { sessionId: S, kind: "redo", text: "The user redid your last turn", data: { undoId: "undo_1", turnIds: ["turn_1"], restored: ["/w/src/app.py"] } } } }]);
    expect(await undo.locator("button").count()).toBe(0);
    expect(await undo.locator(".notice-kind").innerText()).toBe("redone");
    expect(await rows.nth(0).getAttribute("class")).toBe("changed-file status-changed");

    await changes.locator("button[data-action=undoTurn]").click();
    expect(await sentOf("undoTurn")).toEqual([{ type: "undoTurn", turnId: "turn_1" }]);

    // Edit and rerun: the prompt's text to edit, rerun here or in a new chat.
    const user = page.locator(".entry.user");
    await user.locator("button[data-action=editPrompt]").click();
    const editor = user.locator(".rerun textarea");
    expect(await editor.inputValue()).toBe("rename the greeting");
    await editor.fill("rename the greeting to hey");
    await page.screenshot({ path: path.join(ARTIFACTS, "chat-rerun.png") });
    await user.locator("button[data-how=fork]").click();
    expect(await sentOf("rerun")).toEqual([{ type: "rerun", turnId: "turn_1", text: "rename the greeting to hey", how: "fork" }]);
    expect(await user.locator(".rerun").isHidden()).toBe(true);

    // While a turn runs, nothing is undone or rerun.
    await send([{ type: "event", event: { method: "turn/started", params: { ...base, turnId: "turn_2" } } }]);
    expect(await user.locator("button[data-action=editPrompt]").isDisabled()).toBe(true);
    expect(await changes.locator("button[data-action=undoTurn]").isDisabled()).toBe(true);
    expect(problems).toEqual([]);
  });
});
