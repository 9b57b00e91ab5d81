/**
 * In headless Chromium: recorded streams from the real daemon replayed into the chat page (a
 * task agent nested in its call's card, a compaction divider, a watch that started a turn) and
 * into the preview panel's page, one page per kind; screenshots kept as artifacts.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import type { Page } from "playwright-core";
import { beforeEach, describe, expect, it } from "vitest";
import type { FromWebview, ToWebview } from "../../src/messages/chat";
import type { FromPreview, PreviewInfo, ToPreview } from "../../src/messages/preview";
import type { PreviewKind } from "../../src/protocol";
import { browserRig, postAll } from "../support/page";

const ARTIFACTS = path.resolve(__dirname, "../artifacts");
interface Recording { sessionId: string; messages: ToWebview[]; panels?: ToPreview[][] }
const fixture = (name: string) => JSON.parse(fs.readFileSync(path.resolve(__dirname, "../fixtures", name), "utf8")) as Recording;

const rig = browserRig();
let page: Page;
const problems: string[] = [];


async function open(url: string, viewport = { width: 420, height: 760 }): Promise<void> {
  problems.length = 0;
  rig.server.requests.length = 0;
  await page?.close();
  page = await rig.browser.newPage({ viewport });
  page.on("console", (m) => { if (m.type() === "error" || m.type() === "warning") problems.push(m.text()); });
  page.on("pageerror", (e) => problems.push(String(e)));
  await page.goto(url);
  await page.waitForFunction(() => (window as unknown as { __posted: { type: string }[] }).__posted.some((m) => m.type === "ready"));
}

async function send(messages: unknown[]): Promise<void> {
  await postAll(page, messages);
}

async function posted<T>(): Promise<T[]> {
  return page.evaluate(() => (window as unknown as { __posted: T[] }).__posted);
}

describe("chat page: work beyond one turn", () => {
  beforeEach(() => open(rig.server.url));

  it("a task agent's work nests in its card; its question is answered there; it folds when done", async () => {
    const { messages } = fixture("agent-turn.json");
    const at = messages.findIndex((m) => m.type === "approval" && m.cycle.parentCallId);
    const nested = messages[at] as Extract<ToWebview, { type: "approval" }>;
    await send([{ type: "daemon", state: "ready" }, { type: "features", perCallDecisions: true, editReview: true }, ...messages.slice(0, at + 1)]);

    const parent = page.locator("#transcript > .entry.tool");
    const inner = parent.locator("details.agent-work .entry.tool");
    await inner.locator(".approval button[data-action=approve]").waitFor({ timeout: 5000 });
    expect(await parent.count()).toBe(1);
    expect(await parent.locator(":scope > .card-head .header").innerText()).toContain("task_agent");
    expect(await parent.locator("details.agent-work > summary").innerText()).toBe("Task agent · 1 tool call · waiting for approval");
    expect(await inner.locator(".card-head .header").innerText()).toContain("wc -w < notes.txt");
    await page.screenshot({ path: path.join(ARTIFACTS, "chat-agent-approval.png") });

    await inner.locator(".approval button[data-action=approve]").click();
    const answer = (await posted<FromWebview>()).find((m) => m.type === "answer");
    expect(answer).toEqual({ type: "answer", cycleId: nested.cycle.cycleId, answer: { decision: "approve" } });

    await send(messages.slice(at + 1));
    await page.locator("#transcript > .entry.agent:not(.streaming)").waitFor({ timeout: 5000 });
    expect(await parent.locator(":scope > .card-head .status").innerText()).toBe("completed · approved");
    expect(await inner.locator(".card-head .status").textContent()).toBe("completed · approved");
    expect(await parent.locator("details.agent-work").getAttribute("open")).toBeNull();
    expect(await parent.locator("details.agent-work > summary").innerText()).toBe("Task agent · 1 tool call");
    await parent.locator("details.agent-work > summary").click();
    expect(await parent.locator("details.agent-work .entry.agent .md strong").innerText()).toBe("4");
    await page.screenshot({ path: path.join(ARTIFACTS, "chat-agent-done.png") });
    // A later redraw keeps the section the user opened.
    await send([{ type: "event", event: { method: "session/usage", params: { sessionId: nested.cycle.sessionId, contextTokens: 900, contextWindow: 32768 } } }]);
    await page.waitForTimeout(50);
    expect(await parent.locator("details.agent-work").getAttribute("open")).toBe("");
    expect(problems).toEqual([]);
  });

  it("compaction: a divider with its figures, the summary folded; a fired watch and the turn it started", async () => {
    await open(rig.server.url, { width: 420, height: 900 });
    const { sessionId, messages } = fixture("compaction.json");
    await send(messages);
    const divider = page.locator(".entry.compaction");
    await divider.waitFor({ timeout: 5000 });
    expect(await divider.locator(".divider").innerText()).toMatch(/^Context compacted \(manual\) · [\d.]+k → [\d.]+k of [\d.]+k tokens · 2 messages summarised · the summary cost \d+ tokens$/);
    expect(await divider.locator("details").getAttribute("open")).toBeNull();
    await divider.locator("summary").click();
    expect(await divider.locator(".md").innerText()).toBe("The user said hello three times; each was answered.");
    expect(await page.locator("#usage").innerText()).toMatch(/^context \d+% of \d+k \(estimated\)/);

    const base = { sessionId, turnId: "turn-woken" };
    const report = '[Watch "ci" — poll #1/100, 2h elapsed]\n$ cat ci.json\n{"status": "passed", "duration": 312}\n[condition met: data["status"] == "passed" — watch auto-cancelled]';
    await send([
      { type: "event", event: { method: "session/notice", params: { sessionId, kind: "watch", text: report, data: { name: "ci", reason: 'condition met: data["status"] == "passed"', pollCount: 1, maxPolls: 100 } } } },
      { type: "event", event: { method: "turn/started", params: base } },
      { type: "event", event: { method: "item/started", params: { ...base, itemId: "m9", item: { type: "agentMessage", id: "m9", text: "" } } } },
      { type: "event", event: { method: "item/agentMessage/delta", params: { ...base, itemId: "m9", delta: "CI passed in 312 s: the branch is ready to merge." } } },
    ]);
    await page.locator(".entry.notice details.notice-body").waitFor();
    expect(await page.locator("#stop").isVisible()).toBe(true);
    expect(await page.locator("#turn-state").innerText()).toBe("working…");
    await send([
      { type: "event", event: { method: "turn/completed", params: { ...base, status: "completed" } } },
      { type: "event", event: { method: "session/notice", params: { sessionId, kind: "notify", text: "The branch is ready to merge.", data: { title: "CI", channels: ["editor"] } } } },
    ]);
    await page.waitForFunction(() => document.querySelector("#stop")?.hasAttribute("hidden"));
    expect(await page.locator(".entry.notice summary").innerText()).toBe('watch “ci”: condition met: data["status"] == "passed"');
    expect(await page.locator(".entry.notice strong").innerText()).toBe("CI");
    await page.locator(".entry.notice summary").click();
    await page.locator("#transcript").evaluate((t) => { t.scrollTop = t.scrollHeight; });
    await page.screenshot({ path: path.join(ARTIFACTS, "chat-compaction-watch.png") });
    expect(problems).toEqual([]);
  });
});

/** The messages a panel gets for some bytes, in ranges of `chunk`. */
function panelMessages(info: Omit<PreviewInfo, "size">, bytes: Buffer, chunk = 64 * 1024): ToPreview[] {
  const out: ToPreview[] = [{ type: "open", preview: { ...info, size: bytes.length } }];
  for (let offset = 0; offset < bytes.length || offset === 0; offset += chunk) {
    const part = bytes.subarray(offset, offset + chunk);
    out.push({ type: "chunk", offset, data: part.toString("base64"), eof: offset + part.length >= bytes.length });
    if (!part.length) break;
  }
  return out;
}

const info = (kind: PreviewKind, title: string, source: string, contentType: string, csp = "default-src 'none'; sandbox"): Omit<PreviewInfo, "size"> =>
  ({ sessionId: "s", previewId: `${kind}-id`, kind, title, source, contentType, csp });

async function showPreview(kind: PreviewKind, messages: ToPreview[], viewport = { width: 760, height: 560 }): Promise<void> {
  await open(rig.server.previewUrl(kind), viewport);
  await send(messages);
  await page.waitForFunction(() => document.body.dataset.state === "shown" || document.body.dataset.state === "failed", undefined, { timeout: 20000 });
  expect(await page.evaluate(() => document.body.dataset.state)).toBe("shown");
}

describe("preview panel", () => {
  it("a table recorded from the daemon: header, rows, the source to open", async () => {
    const { panels } = fixture("preview.json");
    await showPreview("table", panels![0]!);
    expect(await page.locator("#head .title").innerText()).toBe("Temperatures");
    expect(await page.locator("table thead th").allInnerTexts()).toEqual(["city", "temp"]);
    expect(await page.locator("table tbody tr").count()).toBe(400);
    expect(await page.locator(".table .note").innerText()).toBe("400 rows.");
    await page.screenshot({ path: path.join(ARTIFACTS, "preview-table.png") });
    await page.locator("button.source").click();
    expect((await posted<FromPreview>()).filter((m) => m.type === "openSource")).toHaveLength(1);
    expect(problems).toEqual([]);
  });

  it("markdown, sanitized; nothing it names is fetched", async () => {
    const md = "# Release notes\n\n- **fast** start\n- `session/compact`\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n![tracker](/remote-md.png)\n\n<script>window.__pwned = 1</script>\n\n```py\nprint('hi')\n```\n";
    await showPreview("markdown", panelMessages(info("markdown", "NOTES.md", "/w/NOTES.md", "text/markdown"), Buffer.from(md)));
    expect(await page.locator(".md h1").innerText()).toBe("Release notes");
    expect(await page.locator(".md table td").allInnerTexts()).toEqual(["1", "2"]);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    await page.screenshot({ path: path.join(ARTIFACTS, "preview-markdown.png") });
    expect(rig.server.requests.filter((r) => r.startsWith("/remote"))).toEqual([]);
    expect(problems.filter((p) => !p.includes("Content Security Policy"))).toEqual([]);
  });

  it("a web page: its own styles, no script, no request anywhere", async () => {
    const html = `<html><head><base href="https://example.com/guide/"><title>Guide</title>
<style>body { font-family: serif; background: #fdf6e3; color: #333; } h1 { color: rgb(180, 40, 40); }</style>
<link rel="stylesheet" href="/remote-style.css"><script src="/remote-script.js"></script><script>parent.__pwned = 1; fetch("/remote-fetch");</script></head>
<body><h1>Server guide</h1><p style="border-left: 4px solid #2a9d8f; padding-left: 8px">Inline styles stay; <a href="/remote-link">links</a> lead nowhere.</p>
<img src="/remote-img.png" alt="remote image"><img src="data:image/gif;base64,R0lGODlhAQABAIAAAP///wAAACwAAAAAAQABAAACAkQBADs=" alt="inline" width="20" height="20">
<form action="/remote-form"><input name="q"></form><iframe src="/remote-frame"></iframe></body></html>`;
    const web = info("web", "Server guide", "https://example.com/guide", "text/html", "default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:; sandbox");
    await showPreview("web", panelMessages(web, Buffer.from(html)));
    const frame = page.locator("iframe.web");
    expect(await frame.getAttribute("sandbox")).toBe("");
    expect(await frame.evaluate((f: HTMLIFrameElement) => f.srcdoc.startsWith(`<!DOCTYPE html><meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:">`))).toBe(true);
    expect(await frame.evaluate((f: HTMLIFrameElement) => /<script|<form|<iframe|<base|<link/i.test(f.srcdoc))).toBe(false);
    await page.waitForTimeout(300);
    await page.screenshot({ path: path.join(ARTIFACTS, "preview-web.png") });
    expect(rig.server.requests.filter((r) => r.startsWith("/remote"))).toEqual([]);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
  });

  it("an image, as a data: URI of its own bytes", async () => {
    const shot = await rig.browser.newPage({ viewport: { width: 320, height: 180 } });
    await shot.setContent(`<body style="margin:0;background:linear-gradient(90deg,#264653,#2a9d8f,#e9c46a,#f4a261,#e76f51)"><h1 style="font:bold 40px sans-serif;color:#fff;padding:40px">chart.png</h1></body>`);
    const png = await shot.screenshot();
    await shot.close();
    await showPreview("image", panelMessages(info("image", "chart.png", "/w/chart.png", "image/png"), png, 4096));
    const size = await page.locator(".image img").evaluate((img: HTMLImageElement) => [img.naturalWidth, img.naturalHeight]);
    expect(size).toEqual([320, 180]);
    await page.screenshot({ path: path.join(ARTIFACTS, "preview-image.png") });
    expect(problems).toEqual([]);
  });

  it("a PDF, drawn page by page in the panel", async () => {
    const doc = await rig.browser.newPage();
    await doc.setContent(`<h1 style="font-family:sans-serif">Quarterly report</h1><p style="font-family:serif;font-size:18px">Revenue grew 12%.</p><div style="page-break-before:always"><h2>Appendix</h2></div>`);
    const pdf = await doc.pdf({ format: "A5" });
    await doc.close();
    await showPreview("pdf", panelMessages(info("pdf", "report.pdf", "https://example.com/report.pdf", "application/pdf", ""), pdf, 16 * 1024));
    expect(await page.locator(".pdf canvas.page").count()).toBe(2);
    expect(await page.locator(".pdf .note").innerText()).toBe("2 pages.");
    // The page was drawn: its canvas is not blank.
    const inked = await page.locator(".pdf canvas.page").first().evaluate((c: HTMLCanvasElement) => {
      const data = c.getContext("2d")!.getImageData(0, 0, c.width, c.height).data;
      let dark = 0;
      for (let i = 0; i < data.length; i += 4) if (data[i]! < 128) dark++;
      return dark;
    });
    expect(inked).toBeGreaterThan(100);
    await page.screenshot({ path: path.join(ARTIFACTS, "preview-pdf.png") });
    expect(rig.server.requests.filter((r) => !/^\/(preview-pdf\.html|preview\.(js|css)|theme\.css|stub\.js|favicon\.ico)$/.test(r))).toEqual([]);
  });

  it("a read that failed says so", async () => {
    await open(rig.server.previewUrl("text"));
    await send([{ type: "open", preview: { ...info("text", "log.txt", "/w/log.txt", "text/plain"), size: 10 } }, { type: "failed", message: "the session was closed" }]);
    await page.locator(".problem").waitFor();
    expect(await page.locator(".problem").innerText()).toBe("The preview could not be read: the session was closed");
  });
});
