/** Previews (tables, the panel's policy, reading in ranges), watches, the sessions tree, revisions. */
import { describe, expect, it } from "vitest";
import { daemonFeatures } from "../../src/client";
import type { PreviewPanelHooks } from "../../src/host";
import { previewHtml, previewPolicy } from "../../src/messages/html";
import type { ToPreview } from "../../src/messages/preview";
import { parseDelimited, parseTable } from "../../src/webview/table";
import { byteLength, PreviewController, sourceTarget } from "../../src/previews";
import type { PreviewReadResult, SessionInfo, WatchInfo } from "../../src/protocol";
import { sessionNodes } from "../../src/sessions";
import { every, until, watchActions, watchPickItems } from "../../src/watches";
import { showLoginPage } from "../../src/mcp";
import { FakeHost } from "../support/fakeHost";

describe("table previews", () => {
  it("CSV with quotes, embedded delimiters and line breaks, CRLF, a BOM", () => {
    expect(parseDelimited('a,"b, c","say ""hi"""\r\n1,"two\nlines",3\n', ",")).toEqual([["a", "b, c", 'say "hi"'], ["1", "two\nlines", "3"]]);
    const t = parseTable("\uFEFFname,qty\nbolt,4\nnut\n", "text/csv");
    expect(t).toEqual({ columns: ["name", "qty"], rows: [["bolt", "4"], ["nut"]], total: 2 });
  });

  it("TSV by its content type; only the first rows kept, the total told", () => {
    const t = parseTable("x\ty\n" + Array.from({ length: 10 }, (_, i) => `${i}\t${i * i}`).join("\n"), "text/tab-separated-values", 3);
    expect([t.columns, t.rows, t.total]).toEqual([["x", "y"], [["0", "0"], ["1", "1"], ["2", "4"]], 10]);
  });

  it("JSON: objects (a column per key), lists of lists, an object's keys, values as text", () => {
    expect(parseTable('[{"a":1,"b":{"c":2}},{"b":null,"d":"x"}]', "application/json")).toEqual({ columns: ["a", "b", "d"], rows: [["1", '{"c":2}', ""], ["", "", "x"]], total: 2 });
    expect(parseTable("[[1,2],[3]]", "application/json").rows).toEqual([["1", "2"], ["3", ""]]);
    expect(parseTable('{"k":"v","n":[1]}', "application/json")).toEqual({ columns: ["key", "value"], rows: [["k", "v"], ["n", "[1]"]], total: 2 });
    expect(() => parseTable("{nope", "application/json")).toThrow();
  });

  it("a huge CSV parses in one pass", () => {
    const big = "a,b\n" + "1,2\n".repeat(200_000);
    const start = performance.now();
    expect(parseTable(big, "text/csv", 10).total).toBe(200_000);
    expect(performance.now() - start).toBeLessThan(2000);
  });
});

describe("preview panel page", () => {
  it("fetches nothing; inline styles only for web pages; one nonce'd script", () => {
    expect(previewPolicy("https://x", "N", "markdown")).toBe("default-src 'none'; img-src data: blob:; style-src https://x; font-src data:; script-src 'nonce-N'");
    expect(previewPolicy("https://x", "N", "web")).toContain("style-src https://x 'unsafe-inline'");
    const html = previewHtml({ cspSource: "https://x", scriptUri: "https://x/p.js", styleUri: "https://x/p.css", nonce: "N" }, "pdf", 'a "<b>"');
    expect(html.match(/<script/g)?.length).toBe(1);
    expect(html).toContain("<title>a &quot;&lt;b>&quot;</title>");
    expect(html).not.toMatch(/unsafe-eval|connect-src|https?:\/\/(?!x)/);
  });

  it("sources: web URLs to the browser, absolute paths to the editor, nothing else", () => {
    expect(sourceTarget("https://example.com/a")).toEqual({ url: "https://example.com/a" });
    expect(sourceTarget("/w/notes.md")).toEqual({ path: "/w/notes.md" });
    expect(sourceTarget("attachment:abc")).toBeNull();
    expect(sourceTarget("javascript:alert(1)")).toBeNull();
    expect([byteLength("YWJj"), byteLength("YWI="), byteLength("YQ=="), byteLength("")]).toEqual([3, 2, 1, 0]);
  });
});

describe("PreviewController", () => {
  const content = Buffer.from("0123456789".repeat(5));
  const reads: [number, number][] = [];
  const reader = async (_s: string, previewId: string, offset: number, length: number): Promise<PreviewReadResult> => {
    reads.push([offset, length]);
    const data = content.subarray(offset, offset + length);
    return { previewId, kind: "text", title: "digits", source: "/w/d.txt", contentType: "text/plain", size: content.length, offset, data: data.toString("base64"), eof: offset + data.length >= content.length };
  };
  const host = () => new FakeHost({ command: "", args: [], model: "", baseUrl: "", logLevel: "INFO", skipPermissions: false, approvalMode: null, editorContext: true, shareDaemon: false }, { name: "w", path: "/w" });

  it("reads a preview in ranges into one panel; showing it again brings that panel forward", async () => {
    reads.length = 0;
    const h = host();
    const previews = new PreviewController(h, reader, 16);
    await previews.opened({ sessionId: "s", callId: "c", previewId: "p", kind: "text", title: "digits", source: "/w/d.txt", contentType: "text/plain", size: content.length, csp: "default-src 'none'; sandbox" });
    await h.until("the last range", () => h.panels[0]?.posted.some((m) => m.type === "chunk" && m.eof) ?? false);
    expect(reads).toEqual([[0, 16], [16, 16], [32, 16], [48, 16]]);
    const chunks = h.panels[0]!.posted.filter((m): m is Extract<ToPreview, { type: "chunk" }> => m.type === "chunk");
    expect(Buffer.concat(chunks.map((c) => Buffer.from(c.data, "base64"))).equals(content)).toBe(true);
    expect(chunks.map((c) => c.offset)).toEqual([0, 16, 32, 48]);
    expect(h.panels[0]!.posted[0]).toMatchObject({ type: "open", preview: { kind: "text", size: 50, csp: "default-src 'none'; sandbox" } });
    await previews.show("s", "p");
    expect([h.panels.length, h.panels[0]!.revealed]).toEqual([1, 1]);
    h.panels[0]!.hooks.onMessage({ type: "openSource" });
    expect(h.opened).toEqual(["/w/d.txt"]);
    previews.closeSession("s");
    expect(h.panels[0]!.disposed).toBe(true);
  });

  it("a preview known only by its id (after a reload) is read first, then shown; a gone one says so", async () => {
    reads.length = 0;
    const h = host();
    const previews = new PreviewController(h, reader, 64);
    await previews.show("s", "p");
    await h.until("the content", () => h.panels[0]?.posted.some((m) => m.type === "chunk") ?? false);
    expect(reads).toEqual([[0, 64]]);
    expect(h.panels[0]!.posted[0]).toMatchObject({ type: "open", preview: { title: "digits", csp: "default-src 'none'; sandbox" } });
    const gone = new PreviewController(h, async () => { throw Object.assign(new Error("no preview"), { code: -32021, data: { kind: "previewNotFound" } }); });
    await gone.show("s", "q");
    expect(h.shown.at(-1)).toMatchObject({ kind: "warn", message: "The preview is no longer available (no preview)." });
  });

  it("a read that fails midway tells the panel", async () => {
    const h = host();
    let n = 0;
    const previews = new PreviewController(h, async (s, p, offset, length) => {
      if (n++) throw new Error("session closed");
      return reader(s, p, offset, length);
    }, 8);
    await previews.opened({ sessionId: "s", callId: "c", previewId: "p", kind: "text", title: "t", source: "x", contentType: "text/plain", size: 50 });
    await h.until("the failure", () => h.panels[0]?.posted.some((m) => m.type === "failed") ?? false);
    expect(h.panels[0]!.posted.at(-1)).toEqual({ type: "failed", message: "session closed" });
    const hooks: PreviewPanelHooks = h.panels[0]!.hooks;
    hooks.onDispose();
    await previews.show("s", "p");
    expect(h.panels).toHaveLength(2);
  });
});

describe("watches", () => {
  const now = new Date("2026-12-03T12:00:00Z");
  const watch: WatchInfo = { watchId: "w1abcdef", sessionId: "s1", name: "ci", command: "gh pr checks 12", intervalSeconds: 300, stopOn: "'pass' in output", maxPolls: 100, pollCount: 3, active: true, nextPollAt: "2026-12-03T12:04:00Z", createdAt: "2026-12-03T11:00:00Z" };

  it("rows: name, schedule, progress, next poll; the command, condition and session below", () => {
    const sessions: SessionInfo[] = [{ sessionId: "s1", title: "ship it", cwd: "/w", kind: "interactive", createdAt: "", updatedAt: "", status: "idle" }];
    const [row] = watchPickItems([watch, { ...watch, watchId: "w2", sessionId: "gone1234567", stopOn: null, nextPollAt: "2026-12-03T11:00:00Z" }], sessions, now);
    expect([row!.label, row!.description, row!.detail]).toEqual(["$(eye) ci", "every 5m · poll 3/100 · next in 4m", "$ gh pr checks 12  ·  stop on: 'pass' in output  ·  session: ship it"]);
    const other = watchPickItems([{ ...watch, sessionId: "gone1234567", stopOn: null, nextPollAt: "2026-12-03T11:00:00Z" }], [], now)[0]!;
    expect([other.description, other.detail]).toEqual(["every 5m · poll 3/100 · due now", "$ gh pr checks 12  ·  until the output changes  ·  session: gone1234"]);
    expect(watchActions(watch).map((a) => a.value)).toEqual(["cancel", "session"]);
    expect([every(45), every(600), every(5400), every(86400), until(null, now)]).toEqual(["45s", "10m", "1h 30m", "24h", ""]);
  });
});

describe("sessions tree with coordinators", () => {
  it("a coordinator's children are listed under it; an orphan stays at the top", () => {
    const s = (id: string, extra: Partial<SessionInfo> = {}): SessionInfo => ({ sessionId: id, title: id, cwd: "/w", kind: "interactive", createdAt: "2026-12-03T10:00:00Z", updatedAt: "2026-12-03T11:55:00Z", status: "idle", ...extra });
    const nodes = sessionNodes([s("alpha", { parentSessionId: "coord", status: "running" }), s("coord", { kind: "coordinator" }), s("solo"), s("orphan", { parentSessionId: "gone" })], "alpha", new Date("2026-12-03T12:00:00Z"));
    expect(nodes.map((n) => [n.label, n.description, n.icon, n.children?.map((c) => c.label)])).toEqual([
      ["coord", "coordinator · w · 5 min ago", "organization", ["● alpha"]],
      ["solo", "w · 5 min ago", "comment-discussion", undefined],
      ["orphan", "w · 5 min ago", "comment-discussion", undefined],
    ]);
    expect(nodes[0]!.children![0]!.tooltip).toContain("started by a coordinator session");
  });
});

describe("daemon revisions", () => {
  it("turn on what each revision added", () => {
    expect(daemonFeatures({})).toEqual({ perCallDecisions: false, editReview: false, editArguments: false, policies: false, watches: false, compaction: false, approvalModes: false, checkpoints: false, editor: false, composer: false, mcpLogin: false });
    expect(daemonFeatures({ protocolRevision: "1.3" })).toEqual({ perCallDecisions: true, editReview: true, editArguments: false, policies: false, watches: true, compaction: false, approvalModes: false, checkpoints: false, editor: false, composer: false, mcpLogin: false });
    expect(daemonFeatures({ protocolRevision: "1.4" }).compaction).toBe(true);
    expect(daemonFeatures({ protocolRevision: "1.5" })).toMatchObject({ editArguments: true, policies: true });
    expect(daemonFeatures({ protocolRevision: "1.9" })).toMatchObject({ approvalModes: true, checkpoints: false });
    expect(daemonFeatures({ protocolRevision: "1.10" })).toMatchObject({ approvalModes: true, checkpoints: true, editor: false });
    expect(daemonFeatures({ protocolRevision: "1.12" })).toMatchObject({ checkpoints: true, editor: true, composer: false });
    expect(daemonFeatures({ protocolRevision: "1.13" })).toMatchObject({ editor: true, composer: true, mcpLogin: false });
    expect(daemonFeatures({ protocolRevision: "1.14" })).toMatchObject({ composer: true, mcpLogin: true });
    expect(daemonFeatures({ protocolRevision: "2.0" }).policies).toBe(true);
  });
});

describe("an MCP server's login page", () => {
  const host = () => new FakeHost({ command: "", args: [], model: "", baseUrl: "", logLevel: "INFO", skipPermissions: false, approvalMode: null, editorContext: true, shareDaemon: false }, { name: "w", path: "/w" });
  const url = "http://127.0.0.1:9/authorize?client_id=c&redirect_uri=http%3A%2F%2F127.0.0.1%3A5%2Fcb&state=s";

  it("opened in the browser for a tool call's step-up: it says why, the address stays at hand, nothing of it is logged", async () => {
    const h = host();
    h.respond = (shown) => (shown.actions.includes("Copy Link") ? "Copy Link" : undefined);
    expect(await showLoginPage(h, { server: "docs", url, sessionId: "s1" })).toEqual({ opened: true });
    expect(h.opened).toEqual([url]);
    expect(h.shown).toEqual([{ kind: "info", message: `Log in to MCP server docs in your browser (a tool call asks for more access). If no page opened: ${url}`, actions: ["Copy Link"] }]);
    await h.until("the copy", () => h.copied.length > 0);
    expect(h.copied).toEqual([url]);
    expect(h.logs.join("\n")).not.toContain("authorize?");
  });

  it("no browser: a warning with the address, and opened false", async () => {
    const h = host();
    h.browserOpens = false;
    expect(await showLoginPage(h, { server: "docs", url })).toEqual({ opened: false });
    expect(h.shown).toEqual([{ kind: "warn", message: `Open this address to log in to MCP server docs: ${url}`, actions: ["Copy Link"] }]);
    expect(h.copied).toEqual([]);
  });
});
