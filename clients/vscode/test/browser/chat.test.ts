/** The chat page in headless Chromium: a recorded turn replayed, Approve clicked, what it posts. */
import * as fs from "node:fs";
import * as path from "node:path";
import type { Page } from "playwright-core";
import { beforeEach, describe, expect, it } from "vitest";
import type { FromWebview, ToWebview } from "../../src/messages/chat";
import { browserRig, postAll } from "../support/page";

const ARTIFACTS = path.resolve(__dirname, "../artifacts");
const recording = JSON.parse(fs.readFileSync(path.resolve(__dirname, "../fixtures/approval-turn.json"), "utf8")) as { sessionId: string; messages: ToWebview[] };

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

async function send(messages: ToWebview[]): Promise<void> {
  await postAll(page, messages);
}

async function posted(): Promise<FromWebview[]> {
  return page.evaluate(() => (window as unknown as { __posted: FromWebview[] }).__posted);
}

function reset(): ToWebview {
  return { type: "reset", sessionId: recording.sessionId, title: "say hello", items: [], running: false };
}

describe("chat webview", () => {
  it("replays a recorded turn; Approve posts the answer; the transcript renders", async () => {
    const messages = recording.messages;
    const at = messages.findIndex((m) => m.type === "approval");
    const cycle = messages[at];
    if (cycle?.type !== "approval") throw new Error("the recording has no approval");
    await send([{ type: "daemon", state: "ready" }, { type: "features", perCallDecisions: false, editReview: true, editArguments: false }, reset(), ...messages.slice(0, at + 1)]);

    const approve = page.locator(".approval button[data-action=approve]");
    await approve.waitFor({ state: "visible", timeout: 5000 });
    expect(await page.locator(".entry.tool .card-head .header").innerText()).toContain("echo hello-from-bash");
    expect(await page.locator(".entry.tool .status").innerText()).toBe("waiting for approval");
    await page.screenshot({ path: path.join(ARTIFACTS, "chat-approval.png") });

    await page.locator(".approval .feedback").fill("looks fine");
    await approve.click();
    const answer = (await posted()).find((m) => m.type === "answer");
    expect(answer).toEqual({ type: "answer", cycleId: cycle.cycle.cycleId, answer: { decision: "approve", feedback: "looks fine" } });

    await send(messages.slice(at + 1));
    await page.locator(".entry.agent:not(.streaming) .code").waitFor({ timeout: 5000 });
    expect(await page.locator(".approval").count()).toBe(0);
    expect(await page.locator(".entry.tool .status").innerText()).toBe("completed · approved");
    expect(await page.locator(".entry.tool details.output pre").textContent()).toContain("hello-from-bash");
    expect(await page.locator(".entry.agent .md strong").innerText()).toBe("hello-from-bash");
    expect(await page.locator("details.reasoning").getAttribute("open")).toBeNull();
    expect(await page.locator("#usage").innerText()).toMatch(/last turn: \d+ in · \d+ out tokens/);
    await page.screenshot({ path: path.join(ARTIFACTS, "chat-completed.png") });

    await page.locator(".entry.agent .code button[data-action=copy]").click();
    await page.locator(".entry.agent .code button[data-action=insert]").click();
    const code = (await posted()).filter((m) => m.type === "copy" || m.type === "insert");
    expect(code).toEqual([{ type: "copy", text: "echo hello-from-bash\n" }, { type: "insert", text: "echo hello-from-bash\n" }]);
    expect(problems).toEqual([]);
  });

  it("streams markdown without re-creating the blocks already shown", async () => {
    const sessionId = recording.sessionId;
    const delta = (text: string): ToWebview => ({ type: "event", event: { method: "item/agentMessage/delta", params: { sessionId, turnId: "t", itemId: "m", delta: text } } });
    await send([reset(), { type: "event", event: { method: "item/started", params: { sessionId, turnId: "t", itemId: "m", item: { type: "agentMessage", id: "m", text: "" } } } }, delta("First paragraph.\n\nSecond")]);
    const first = page.locator(".entry.agent .md > p").first();
    await first.waitFor();
    await first.evaluate((el) => ((el as HTMLElement & { marker?: number }).marker = 42));
    for (const piece of [" grows", " and grows.", "\n\n```py\nprint(1)\n", "```\n"]) {
      await send([delta(piece)]);
      await page.waitForTimeout(20);
    }
    await page.locator(".entry.agent .code").waitFor();
    expect(await first.evaluate((el) => (el as HTMLElement & { marker?: number }).marker)).toBe(42);
    expect(await page.locator(".entry.agent .md > p").nth(1).innerText()).toBe("Second grows and grows.");
  });

  it("sanitizes what the model writes", async () => {
    const sessionId = recording.sessionId;
    const hostile = "<img src=x onerror=\"window.__pwned=1\"> <script>window.__pwned=2</script> [click](javascript:window.__pwned=3) <a href=\"#\" onclick=\"window.__pwned=4\">a</a>";
    await send([reset(), { type: "event", event: { method: "item/completed", params: { sessionId, turnId: "t", itemId: "m", item: { type: "agentMessage", id: "m", text: hostile } } } }]);
    await page.locator(".entry.agent .md").waitFor();
    expect(await page.locator(".entry.agent img, .entry.agent script, .entry.agent [onerror], .entry.agent [onclick], .entry.agent a[href^=javascript]").count()).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
  });

  it("a stale approval clears; errors show their kind and a hint; Enter sends", async () => {
    const sessionId = recording.sessionId;
    const cycle = recording.messages.find((m) => m.type === "approval")!;
    await send([reset(), cycle, { type: "approvalCleared", cycleId: cycle.type === "approval" ? cycle.cycle.cycleId : "", reason: "withdrawn", decision: "cancelled" },
      { type: "event", event: { method: "turn/completed", params: { sessionId, turnId: "t", status: "failed", error: { kind: "upstreamUnavailable", message: "Cannot reach the model server at http://127.0.0.1:9/v1" } } } }]);
    await page.locator(".entry.error").waitFor();
    expect(await page.locator(".approval").count()).toBe(0);
    expect(await page.locator(".entry.tool .status").innerText()).toContain("withdrawn");
    expect(await page.locator(".entry.error .error-kind").innerText()).toBe("upstreamUnavailable");
    expect(await page.locator(".entry.error .hint").innerText()).toContain("turnstoned.baseUrl");
    await page.locator("#input").fill("next question");
    await page.locator("#input").press("Enter");
    expect((await posted()).filter((m) => m.type === "send")).toEqual([{ type: "send", text: "next question" }]);
    await page.screenshot({ path: path.join(ARTIFACTS, "chat-error.png") });
  });

  it("an edit batch decided call by call: diff on the card, Review, per-call Approve and Deny", async () => {
    const sessionId = recording.sessionId;
    const base = { sessionId, turnId: "t2" };
    const diff = "--- /w/app.py\n+++ /w/app.py\n@@ -1,3 +1,3 @@\n def greet():\n-    return 'hi'\n+    return 'hello'\n \n";
    const items = [
      { callId: "e1", tool: "edit_file", header: "⚙ edit_file: app.py (1 edit)", preview: diff, needsApproval: true, approvalLabel: "edit_file", fileChange: { path: "/w/app.py", kind: "modify" as const, unifiedDiff: diff } },
      { callId: "w1", tool: "write_file", header: "⚙ write_file (write): NOTES.md (12 chars)", preview: "--- /dev/null\n+++ NOTES.md\n@@ -0,0 +1 @@\n+notes here", needsApproval: true, approvalLabel: "write_file", fileChange: { path: "/w/NOTES.md", kind: "create" as const, unifiedDiff: "--- /dev/null\n+++ /w/NOTES.md\n@@ -0,0 +1 @@\n+notes here\n" } },
    ];
    await send([{ type: "features", perCallDecisions: true, editReview: true, editArguments: false }, reset(), { type: "sent", text: "rename the greeting and take notes", queued: false },
      ...items.map((item): ToWebview => ({ type: "event", event: { method: "item/started", params: { ...base, itemId: item.callId, item: { type: "toolCall", id: item.callId, callId: item.callId, tool: item.tool, header: item.header, preview: item.preview, needsApproval: true, status: "pending", isError: false, fileChange: item.fileChange } } } })),
      { type: "approval", cycle: { ...base, cycleId: "k2", items } },
      { type: "event", event: { method: "session/usage", params: { sessionId, contextTokens: 7400, contextWindow: 32768 } } }]);
    const cards = page.locator(".entry.tool");
    await cards.nth(1).locator(".approval button[data-action=approve]").waitFor();
    const order = await cards.nth(0).evaluate((n) => [...n.children].map((c) => c.className.split(" ")[0]));
    expect(order.slice(0, 4)).toEqual(["card-head", "verdicts", "preview", "file-change"]);
    expect(await cards.nth(0).locator(".file-change .kind").innerText()).toBe("modify");
    expect(await cards.nth(0).locator("pre.diff .add").innerText()).toBe("+    return 'hello'");
    expect(await cards.nth(0).locator("pre.diff .del").innerText()).toBe("-    return 'hi'");
    expect(await page.locator("#usage").innerText()).toContain("context 23% of 33k");
    await page.screenshot({ path: path.join(ARTIFACTS, "chat-edit-review.png") });

    await cards.nth(0).locator("button[data-action=review]").click();
    await cards.nth(0).locator("button[data-action=approve]").click();
    await cards.nth(1).locator(".feedback").fill("no notes file");
    await cards.nth(1).locator("button[data-action=deny]").click();
    const sent = (await posted()).filter((m) => m.type === "review" || m.type === "decideCall");
    expect(sent).toEqual([
      { type: "review", callId: "e1" },
      { type: "decideCall", cycleId: "k2", callId: "e1", decision: "approve" },
      { type: "decideCall", cycleId: "k2", callId: "w1", decision: "deny", feedback: "no notes file" },
    ]);
    await send([{ type: "callDecided", cycleId: "k2", callId: "e1", decision: "approve" },
      { type: "approvalCleared", cycleId: "k2", reason: "answered", decision: "deny", calls: { e1: "approve", w1: "deny" } }]);
    await page.waitForFunction(() => document.querySelectorAll(".approval").length === 0);
    expect(await cards.nth(0).locator(".status").innerText()).toBe("pending · approved");
    expect(await cards.nth(1).locator(".status").innerText()).toBe("pending · denied");
    expect(problems).toEqual([]);
  });

  it("verdicts on the cards; Always says what it saves; Edit runs the call edited", async () => {
    const sessionId = recording.sessionId;
    const base = { sessionId, turnId: "t3" };
    const high = { risk: "high" as const, recommendation: "review" as const, rule: "recursive-delete", reason: "deletes files recursively or without asking (rm -rf build)" };
    const medium = { risk: "medium" as const, recommendation: "review" as const, rule: "default", reason: "no rule of the table matched" };
    const items = [
      { callId: "r1", tool: "bash", header: "⚙ bash: rm -rf build", preview: "rm -rf build", needsApproval: true, approvalLabel: "bash", verdict: high, grantRules: [] },
      { callId: "m1", tool: "bash", header: "⚙ bash: make test", preview: "make test", needsApproval: true, approvalLabel: "bash", verdict: medium, grantRules: ["bash:make test"] },
      { callId: "l1", tool: "bash", header: "⚙ bash: ls", preview: "ls", needsApproval: false, approvalLabel: "bash", autoApproved: true, autoApproveReason: "grant: bash:@read-only" },
    ];
    const started = items.map((item): ToWebview => ({ type: "event", event: { method: "item/started", params: { ...base, itemId: item.callId, item: { type: "toolCall", id: item.callId, callId: item.callId, tool: item.tool, header: item.header, preview: item.preview, arguments: JSON.stringify({ command: item.preview }), needsApproval: item.needsApproval, status: "pending", isError: false } } } }));
    await send([{ type: "features", perCallDecisions: true, editReview: true, editArguments: true }, reset(), ...started,
      { type: "approval", cycle: { ...base, cycleId: "k3", judgePending: true, items } }]);
    const cards = page.locator(".entry.tool");
    await cards.nth(1).locator(".approval button[data-action=edit]").waitFor();
    expect(await cards.nth(0).locator(".verdict .risk").first().innerText()).toBe("HIGH");
    expect(await cards.nth(0).locator(".verdict").first().innerText()).toContain("recursive-delete: deletes files recursively");
    expect(await cards.nth(0).locator(".verdict.judge").innerText()).toBe("judge: rating…");
    expect(await cards.nth(0).locator("button[data-action=always]").count()).toBe(0);
    expect(await cards.nth(0).locator(".grant-rules").innerText()).toContain("Asks every time");
    expect(await cards.nth(1).locator("button[data-action=always]").innerText()).toBe("Always allow");
    expect(await cards.nth(1).locator(".grant-rules code").innerText()).toBe("bash:make test");
    expect(await cards.nth(2).locator(".verdicts .auto").innerText()).toBe("ran without asking: grant: bash:@read-only");
    const order = await cards.nth(1).evaluate((n) => [...n.children].map((c) => c.className.split(" ")[0]));
    expect(order.slice(0, 2)).toEqual(["card-head", "verdicts"]);

    await send([{ type: "event", event: { method: "approval/verdicts", params: { ...base, cycleId: "k3", verdicts: { r1: { ...high, rule: "judge", reason: "wipes the build output", tier: "llm", confidence: 0.9 } } } } }]);
    await page.waitForFunction(() => document.querySelector(".entry.tool .verdict.judge")?.textContent?.includes("judge: review 90%"));
    await page.screenshot({ path: path.join(ARTIFACTS, "chat-verdicts.png") });

    await cards.nth(1).locator("button[data-action=edit]").click();
    const editor = cards.nth(1).locator(".edit textarea");
    expect(await editor.inputValue()).toBe("make test");
    await editor.fill("make test TESTS=parser");
    await cards.nth(1).locator("button[data-action=runEdited]").click();
    await cards.nth(0).locator("button[data-action=deny]").click();
    const sent = (await posted()).filter((m) => m.type === "decideCall");
    expect(sent).toEqual([
      { type: "decideCall", cycleId: "k3", callId: "m1", decision: "approve", arguments: { command: "make test TESTS=parser" } },
      { type: "decideCall", cycleId: "k3", callId: "r1", decision: "deny" },
    ]);
    expect(problems).toEqual([]);
  });

  it("an edit that is not a JSON object is refused on the card", async () => {
    const sessionId = recording.sessionId;
    const base = { sessionId, turnId: "t4" };
    const item = { callId: "w9", tool: "write_file", header: "⚙ write_file: a.txt", preview: "", needsApproval: true, approvalLabel: "write_file", grantRules: ["write@workspace"] };
    await send([{ type: "features", perCallDecisions: true, editReview: false, editArguments: true }, reset(),
      { type: "event", event: { method: "item/started", params: { ...base, itemId: "w9", item: { type: "toolCall", id: "w9", callId: "w9", tool: "write_file", header: item.header, arguments: '{"path": "a.txt", "content": "x"}', needsApproval: true, status: "pending", isError: false } } } },
      { type: "approval", cycle: { ...base, cycleId: "k4", items: [item] } }]);
    await page.locator("button[data-action=edit]").click();
    expect(JSON.parse(await page.locator(".edit textarea").inputValue())).toEqual({ path: "a.txt", content: "x" });
    await page.locator(".edit textarea").fill("[1, 2]");
    await page.locator("button[data-action=runEdited]").click();
    expect(await page.locator(".edit-error").innerText()).toBe("The arguments must be a JSON object.");
    await page.locator(".edit textarea").fill('{"path": "b.txt", "content": "y"}');
    await page.locator("button[data-action=runEdited]").click();
    const answers = (await posted()).filter((m) => m.type === "answer");
    expect(answers).toEqual([{ type: "answer", cycleId: "k4", answer: { decision: "approve", calls: { w9: { decision: "approve", arguments: { path: "b.txt", content: "y" } } } } }]);
  });
});
