/**
 * In headless Chromium: what the chat page says of the editor and the project: the chip of the
 * editor state the next prompt carries (left out of one prompt with ×), and the instruction
 * files the model follows, each opening its file.
 */
import * as path from "node:path";
import type { Page } from "playwright-core";
import { beforeEach, describe, expect, it } from "vitest";
import type { FromWebview, ToWebview } from "../../src/messages/chat";
import { browserRig, postAll } from "../support/page";

const ARTIFACTS = path.resolve(__dirname, "../artifacts");
const rig = browserRig();
let page: Page;
const problems: string[] = [];

beforeEach(async () => {
  problems.length = 0;
  await page?.close();
  page = await rig.browser.newPage({ viewport: { width: 420, height: 520 } });
  page.on("console", (m) => { if (m.type() === "error" || m.type() === "warning") problems.push(m.text()); });
  page.on("pageerror", (e) => problems.push(String(e)));
  await page.goto(rig.server.url);
  await page.waitForFunction(() => (window as unknown as { __posted: FromWebview[] }).__posted.some((m) => m.type === "ready"));
});

const posted = () => page.evaluate(() => (window as unknown as { __posted: FromWebview[] }).__posted);
const sends = async () => (await posted()).filter((m): m is Extract<FromWebview, { type: "send" }> => m.type === "send");

const start: ToWebview[] = [
  { type: "daemon", state: "ready" },
  { type: "features", perCallDecisions: true, editReview: true, editArguments: true, approvalModes: true, checkpoints: true },
  { type: "mode", mode: "auto", pending: false, sandbox: { available: true } },
  { type: "reset", sessionId: "s1", title: "", items: [], running: false },
];

describe("chat page: the editor and the project", () => {
  it("the chip says what of the editor goes with the next prompt; × leaves it out of that prompt only", async () => {
    await postAll(page, [...start, { type: "editor", chip: { label: "app.py: lines 10-20 · 1 problem", detail: "Sent with the next prompt: /w/app.py, the selected lines 10-20" } }]);
    const chip = page.locator("#attachments .editor-chip");
    expect(await chip.locator(".editor-label").innerText()).toBe("app.py: lines 10-20 · 1 problem");
    expect(await chip.getAttribute("title")).toBe("Sent with the next prompt: /w/app.py, the selected lines 10-20");
    await page.screenshot({ path: path.join(ARTIFACTS, "chat-editor-chip.png") });

    await page.locator("#input").fill("first");
    await page.locator("#send").click();
    await chip.locator("button[data-action=toggleEditor]").click();
    await page.waitForFunction(() => document.querySelector(".editor-chip")?.classList.contains("left-out"));
    expect(await chip.locator("button").innerText()).toBe("+");
    await page.locator("#input").fill("second");
    await page.locator("#send").click();
    // Left out once: the next prompt carries it again.
    await page.waitForFunction(() => !document.querySelector(".editor-chip")?.classList.contains("left-out"));
    await page.locator("#input").fill("third");
    await page.locator("#send").click();
    expect(await sends()).toEqual([{ type: "send", text: "first" }, { type: "send", text: "second", editor: false }, { type: "send", text: "third" }]);

    await postAll(page, [{ type: "editor", chip: null }]);
    expect(await page.locator(".editor-chip").count()).toBe(0);
    expect(problems).toEqual([]);
  });

  it("the instruction files under the header, a cut one marked; a click opens it; another session has its own", async () => {
    await postAll(page, [...start, { type: "instructions", files: [
      { path: "/home/me/.config/turnstoned/AGENTS.md", label: "~/.config/turnstoned/AGENTS.md", chars: 120, truncated: false },
      { path: "/w/AGENTS.md", label: "AGENTS.md", chars: 31000, truncated: true },
    ] }]);
    const line = page.locator("#instructions");
    expect(await line.isVisible()).toBe(true);
    expect(await line.innerText()).toBe("Instructions: ~/.config/turnstoned/AGENTS.md, AGENTS.md (cut)");
    expect(await line.locator("button").nth(1).getAttribute("title")).toBe("/w/AGENTS.md: cut to 31,000 characters (the instructions are capped)");
    await page.screenshot({ path: path.join(ARTIFACTS, "chat-instructions.png") });
    await line.locator("button", { hasText: /^AGENTS\.md$/ }).click();
    expect((await posted()).filter((m) => m.type === "openFile")).toEqual([{ type: "openFile", path: "/w/AGENTS.md" }]);

    await postAll(page, [{ type: "reset", sessionId: "s2", title: "", items: [], running: false }]);
    expect(await line.isVisible()).toBe(false);
    await postAll(page, [{ type: "instructions", files: [{ path: "/v/CLAUDE.md", label: "CLAUDE.md", chars: 10, truncated: false }] }]);
    expect(await line.innerText()).toBe("Instructions: CLAUDE.md");
    expect(problems).toEqual([]);
  });
});
