/**
 * The chat page in headless Chromium: the model's plan as a checklist at the top of its turn,
 * the @ list (asked as the user types, stale answers dropped, matches highlighted), the / list,
 * a pasted picture as a chip, and what each posts to the host.
 */
import * as path from "node:path";
import type { Page } from "playwright-core";
import { beforeEach, describe, expect, it } from "vitest";
import type { FromWebview, ToWebview } from "../../src/messages/chat";
import { browserRig, postAll } from "../support/page";

const ARTIFACTS = path.resolve(__dirname, "../artifacts");
const S = "session-1";
const rig = browserRig();
let page: Page;
const problems: string[] = [];
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

beforeEach(async () => {
  problems.length = 0;
  page = await rig.browser.newPage({ viewport: { width: 420, height: 640 } });
  page.on("console", (m) => { if (m.type() === "error" || m.type() === "warning") problems.push(m.text()); });
  page.on("pageerror", (e) => problems.push(String(e)));
  await page.goto(rig.server.url);
  await page.waitForFunction(() => (window as unknown as { __posted: FromWebview[] }).__posted.some((m) => m.type === "ready"));
  await postAll(page, start);
});

const send = (messages: ToWebview[]) => postAll(page, messages);
const posted = () => page.evaluate(() => (window as unknown as { __posted: FromWebview[] }).__posted);
const sentOf = async <T extends FromWebview["type"]>(type: T) => (await posted()).filter((m): m is Extract<FromWebview, { type: T }> => m.type === type);
const start: ToWebview[] = [
  { type: "daemon", state: "ready" },
  { type: "features", perCallDecisions: true, editReview: true, editArguments: true, approvalModes: true, checkpoints: true, composer: true },
  { type: "reset", sessionId: S, title: "composer", items: [], running: false },
  { type: "model", model: "qwen2.5-coder", pending: false },
];
const planEvent = (steps: [string, "done" | "in_progress" | "pending"][], explanation?: string): ToWebview => ({
  type: "event", event: { method: "plan/updated", params: { sessionId: S, turnId: "turn_1", steps: steps.map(([step, status]) => ({ step, status })), ...(explanation ? { explanation } : {}) } },
});

describe("chat page: the plan, @ and / lists, pictures", () => {
  it("plan/updated: a checklist at the top of the turn (✓ ▸ ○), replaced in place; a resumed plan is drawn", async () => {
    await send([
      { type: "sent", text: "fix the bug", queued: false, turnId: "turn_1" },
      { type: "event", event: { method: "turn/started", params: { sessionId: S, turnId: "turn_1" } } },
    ]);
    // The page shows the prompt it sent; here the host's account stands in for it.
    await send([{ type: "reset", sessionId: S, title: "composer", items: [{ type: "userMessage", id: "u1", text: "fix the bug", turnId: "turn_1" }], running: true },
      { type: "event", event: { method: "item/completed", params: { sessionId: S, turnId: "turn_1", itemId: "a1", item: { type: "agentMessage", id: "a1", text: "Looking." } } } },
      planEvent([["Read the code", "in_progress"], ["Fix the bug", "pending"], ["Run the tests", "pending"]])]);
    const plan = page.locator(".entry.plan");
    await plan.waitFor();
    const kinds = await page.locator("#transcript > .entry").evaluateAll((els) => els.map((e) => e.className.replace("entry ", "")));
    expect(kinds).toEqual(["user", "plan", "agent"]);
    expect(await plan.locator(".step").allInnerTexts()).toEqual(["▸\nRead the code", "○\nFix the bug", "○\nRun the tests"]);
    expect(await plan.locator(".plan-count").innerText()).toBe("0 of 3 done");

    await send([planEvent([["Read the code", "done"], ["Fix the bug", "in_progress"], ["Run the tests", "pending"]], "The bug is in parse()")]);
    expect(await page.locator(".entry.plan").count()).toBe(1);
    expect(await plan.locator(".step .mark").allInnerTexts()).toEqual(["✓", "▸", "○"]);
    expect(await plan.locator(".step").evaluateAll((els) => els.map((e) => e.className))).toEqual(["step done", "step in_progress", "step pending"]);
    expect(await plan.locator(".plan-why").innerText()).toBe("The bug is in parse()");
    await page.screenshot({ path: path.join(ARTIFACTS, "chat-live-plan.png") });

    await send([{ type: "reset", sessionId: S, title: "composer", items: [{ type: "userMessage", id: "u1", text: "fix the bug", turnId: "turn_1" }, { type: "agentMessage", id: "a1", text: "Done." }], running: false, plan: [{ step: "Read the code", status: "done" }, { step: "Fix the bug", status: "done" }] }]);
    expect(await page.locator(".entry.plan .plan-count").innerText()).toBe("2 of 2 done");
    expect(problems).toEqual([]);
  });

  it("the @ list: asked as the user types (once per pause), a stale answer dropped, matches highlighted; picking inserts @path and the send carries the mention", async () => {
    const input = page.locator("#input");
    await input.click();
    await input.pressSequentially("look at @nt", { delay: 5 });
    await page.waitForFunction(() => (window as unknown as { __posted: FromWebview[] }).__posted.some((m) => m.type === "findFiles" && m.query === "nt"));
    const finds = await sentOf("findFiles");
    // Typed fast: not one request per key.
    expect(finds.map((f) => f.query)).not.toContain("");
    const latest = finds.at(-1)!;
    // An answer to an older request is dropped; the latest is shown.
    await send([{ type: "files", seq: latest.seq - 1, query: "n", files: [{ path: "stale.txt", positions: [] }] }]);
    expect(await page.locator("#complete li").allInnerTexts()).not.toContain("stale.txt");
    await send([{ type: "files", seq: latest.seq, query: "nt", files: [{ path: "notes.txt", positions: [0, 2] }, { path: "src/intro.md", positions: [5, 6] }] }]);
    const list = page.locator("#complete");
    expect(await list.isVisible()).toBe(true);
    expect(await list.locator("li").allInnerTexts()).toEqual(["notes.txt", "src/intro.md"]);
    expect(await list.locator("li").first().locator(".hit").allInnerTexts()).toEqual(["n", "t"]);
    expect(await list.locator("li.active").innerText()).toBe("notes.txt");
    await page.screenshot({ path: path.join(ARTIFACTS, "chat-mentions.png") });

    await input.press("ArrowDown");
    expect(await list.locator("li.active").innerText()).toBe("src/intro.md");
    await input.press("ArrowUp");
    await input.press("Enter");
    expect(await input.inputValue()).toBe("look at @notes.txt ");
    expect(await list.isHidden()).toBe(true);

    // A range typed after a path the list offered.
    await input.pressSequentially("and @src/intro.md:10-40 please", { delay: 2 });
    await input.press("Escape");
    await input.press("Enter");
    const sent = (await sentOf("send")).at(-1)!;
    expect(sent.text).toBe("look at @notes.txt and @src/intro.md:10-40 please");
    expect(sent.mentions).toEqual([{ path: "notes.txt" }, { path: "src/intro.md", startLine: 10, endLine: 40 }]);
    expect(problems).toEqual([]);
  });

  it("the / list: asked once, filtered as the user types, picking completes the name; Enter on a whole command sends it", async () => {
    const input = page.locator("#input");
    await input.click();
    await input.press("/");
    await page.waitForFunction(() => (window as unknown as { __posted: FromWebview[] }).__posted.some((m) => m.type === "listCommands"));
    await send([{ type: "commands", commands: [
      { name: "compact", description: "Summarize the older conversation", kind: "builtin", request: "session/compact" },
      { name: "clear", description: "A new chat", kind: "builtin", request: null },
      { name: "mode", description: "Set the approval mode", kind: "builtin", request: "session/setMode" },
      { name: "review", description: "Review the diff", kind: "skill" },
    ] }]);
    const list = page.locator("#complete");
    expect(await list.locator("li .name").allInnerTexts()).toEqual(["/compact", "/clear", "/mode", "/review"]);
    expect(await list.locator("li").first().locator(".desc").innerText()).toBe("Summarize the older conversation");
    await input.press("c");
    expect(await list.locator("li .name").allInnerTexts()).toEqual(["/compact", "/clear"]);
    await page.screenshot({ path: path.join(ARTIFACTS, "chat-commands.png") });
    await input.press("Tab");
    expect(await input.inputValue()).toBe("/compact ");
    await input.press("Enter");
    expect((await sentOf("send")).at(-1)).toMatchObject({ type: "send", text: "/compact" });
    expect(await sentOf("listCommands")).toHaveLength(1);
    // The host ran it as a command: the prompt goes back out of the transcript.
    await send([{ type: "commandRan", text: "/compact" }]);
    expect(await page.locator(".entry.user").count()).toBe(0);
    expect(problems).toEqual([]);
  });

  it("a pasted picture: a thumbnail chip, removable; sent as an image with the prompt; an error brings it back; history shows thumbnails", async () => {
    const input = page.locator("#input");
    await input.click();
    const paste = (data: string) => page.evaluate((b64) => {
      const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
      const transfer = new DataTransfer();
      transfer.items.add(new File([bytes], "shot.png", { type: "image/png" }));
      document.getElementById("input")!.dispatchEvent(new ClipboardEvent("paste", { clipboardData: transfer, bubbles: true, cancelable: true }));
    }, data);
    await paste(PNG);
    const chip = page.locator("#attachments .image-chip");
    await chip.waitFor();
    expect(await chip.locator("img").getAttribute("src")).toBe(`data:image/png;base64,${PNG}`);
    await paste(PNG);
    await page.waitForFunction(() => document.querySelectorAll("#attachments .image-chip").length === 2);
    await chip.nth(1).locator("button").click();
    await page.waitForFunction(() => document.querySelectorAll("#attachments .image-chip").length === 1);
    await page.screenshot({ path: path.join(ARTIFACTS, "chat-picture.png") });

    await input.fill("what is this?");
    await input.press("Enter");
    await page.waitForFunction(() => document.querySelectorAll("#attachments .image-chip").length === 0);
    const sent = (await sentOf("send")).at(-1)!;
    expect(sent).toMatchObject({ text: "what is this?", images: [{ mimeType: "image/png", data: PNG }] });
    expect(await chip.count()).toBe(0);
    expect(await page.locator(".entry.user img.thumb").count()).toBe(1);

    const error = "Not sent: the model scripted does not take pictures; if it does, set [model] supports_vision = true (invalidParams)";
    await send([{ type: "sendFailed", text: "what is this?", message: error }]);
    expect(await page.locator("#banner").innerText()).toContain("does not take pictures");
    expect(await chip.count()).toBe(1);
    expect(await input.inputValue()).toBe("what is this?");

    await send([{ type: "reset", sessionId: S, title: "composer", items: [{ type: "userMessage", id: "u1", text: "and this?", turnId: "turn_1", images: [{ mimeType: "image/png", data: PNG }] }], running: false }]);
    expect(await page.locator(".entry.user img.thumb").getAttribute("src")).toBe(`data:image/png;base64,${PNG}`);
    expect(problems).toEqual([]);
  });

  it("the header's model: shown, a click asks the host for the picker", async () => {
    const button = page.locator("#chat-head #model");
    expect(await button.innerText()).toBe("qwen2.5-coder ▾");
    await button.click();
    expect(await sentOf("pickModel")).toHaveLength(1);
  });
});
