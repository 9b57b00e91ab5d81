/**
 * The editor as the model sees it, through the extension against the real daemon: the editor
 * state sent with a prompt (and not, with the setting off), the editor services the model's
 * tools ask for (diagnostics, open files, a symbol's definition), unsaved buffers read and
 * edited (the document reloaded after), a file written under a document with newer unsaved
 * text (a warning, the document untouched), the project instructions named in the chat, and
 * undo and redo of a turn from before a reload that remembered nothing.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import type { ChangesEntry, UndoEntry, UserEntry } from "../../src/chat/state";
import { INITIALIZATION_OPTIONS } from "../../src/editor";
import type { ToWebview } from "../../src/messages/chat";
import { appTests, last, launch, pageState, settings, withModel } from "../support/app";
import { writeConfig } from "../support/daemon";
import { FakeHost } from "../support/fakeHost";

const t = appTests();
const AUTO = '[approvals]\nmode = "auto"\n';

interface Logged { messages: { role: string; content?: unknown }[]; tools: string[] }

/** The chat with the real daemon and the scripted model, which logs every request it gets. */
async function ready(replies: unknown[], config?: string): Promise<FakeHost> {
  if (config) writeConfig(t.home, config);
  const model = await withModel(t, replies, { messageLog: path.join(t.dir, "messages.jsonl") });
  const host = new FakeHost(settings({ baseUrl: model.baseUrl }), { name: "work", path: t.work });
  launch(t, host);
  await host.until("the daemon", () => host.status.text.includes("scripted"));
  host.fromPage({ type: "ready" });
  await host.until("features", () => Boolean(last(host, "features")));
  return host;
}

/** What the model was sent, request by request. */
function requests(): Logged[] {
  const file = path.join(t.dir, "messages.jsonl");
  return fs.existsSync(file) ? fs.readFileSync(file, "utf8").trim().split("\n").map((l) => JSON.parse(l) as Logged) : [];
}

/** The tool results the model read in its `n`th request. */
const toolResults = (n: number) => requests()[n]!.messages.filter((m) => m.role === "tool").map((m) => String(m.content));
/** Everything the model read from the user in its `n`th request. */
const userText = (n: number) => requests()[n]!.messages.filter((m) => m.role === "user").map((m) => JSON.stringify(m.content)).join("\n");

const turnEnded = (host: FakeHost, n = 1) => host.until(`turn ${n} to end`, () => host.posted.filter((m) => m.type === "event" && m.event.method === "turn/completed").length >= n, 30000);

async function approveNext(host: FakeHost, tool: string, before?: () => void): Promise<void> {
  const asked = () => host.posted.find((m): m is Extract<ToWebview, { type: "approval" }> => m.type === "approval" && m.cycle.items.some((i) => i.tool === tool && i.needsApproval));
  await host.until(`the ${tool} question`, () => Boolean(asked()), 30000);
  before?.();
  host.fromPage({ type: "answer", cycleId: asked()!.cycle.cycleId, answer: { decision: "approve" } });
}

describe("the editor, for the model, against the real daemon", () => {
  it("a prompt carries the active file and its selection; with turnstoned.editorContext off it does not", async () => {
    const file = path.join(t.work, "app.py");
    fs.writeFileSync(file, "def total(xs):\n    return sum(xs)\n\nprint(total([1, 2]))\n");
    const host = await ready([{ text: "It sums." }, { text: "Still sums." }]);
    expect(host.initOptions).toEqual([INITIALIZATION_OPTIONS]);
    host.openDocument(file, undefined, "python");
    host.focusEditor(file, { range: { startLine: 0, startCharacter: 0, endLine: 1, endCharacter: 18 }, text: "def total(xs):\n    return sum(xs)" }, { startLine: 0, startCharacter: 0, endLine: 3, endCharacter: 0 });
    await host.until("the chip", () => last(host, "editor")?.chip?.label === "app.py: lines 1-2");
    expect(last(host, "editor")!.chip!.detail).toContain(`${file}, the selected lines 1-2, the visible lines 1-3`);

    host.fromPage({ type: "send", text: "what does this do?" });
    await turnEnded(host);
    const first = userText(0);
    expect(first).toContain("[Editor state");
    expect(first).toContain("Active file: app.py (python)");
    expect(first).toContain("Selection: lines 1-2");
    expect(first).toContain("return sum(xs)");
    // The transcript shows the prompt alone.
    const sessionId = pageState(host.posted).sessionId!;
    const history = await host.daemons[0]!.raw.sendRequest("session/resume", { sessionId }) as { items: { type: string; text?: string }[] };
    expect(history.items.filter((i) => i.type === "userMessage").map((i) => i.text)).toEqual(["what does this do?"]);

    host.changeSettings({ editorContext: false });
    await host.until("the chip gone", () => last(host, "editor")?.chip === null);
    host.fromPage({ type: "send", text: "and now?" });
    await turnEnded(host, 2);
    const prompt = requests()[1]!.messages.filter((m) => m.role === "user").map((m) => JSON.stringify(m.content)).find((c) => c.includes("and now?"));
    expect(prompt).toBeDefined();
    expect(prompt).not.toContain("[Editor state");
  });

  it("the model's editor tools: the diagnostics the test set, the open files, a definition from the language server", async () => {
    const file = path.join(t.work, "app.py");
    fs.writeFileSync(file, "x = 1\nprint(y)\n");
    const host = await ready([
      { toolCalls: [
        ["d1", "editor_diagnostics", JSON.stringify({ path: "app.py" })],
        ["o1", "editor_open_files", "{}"],
        ["s1", "editor_symbol", JSON.stringify({ action: "definition", path: "app.py", line: 2, symbol: "y" })],
      ] },
      { text: "y is not defined." },
    ]);
    host.openDocument(file, undefined, "python");
    host.focusEditor(file);
    host.setDiagnostics(file, [{ range: { startLine: 1, startCharacter: 6, endLine: 1, endCharacter: 7 }, severity: "error", message: "\"y\" is not defined", source: "pyright", code: "reportUndefinedVariable" }]);
    const asked: unknown[] = [];
    host.symbols = (action, p, line, character) => {
      asked.push({ action, p, line, character });
      return [{ path: file, range: { startLine: 0, startCharacter: 0, endLine: 0, endCharacter: 1 }, text: "x = 1" }];
    };
    host.fromPage({ type: "send", text: "why does it fail?" });
    await turnEnded(host);
    expect(requests()[0]!.tools).toEqual(expect.arrayContaining(["editor_diagnostics", "editor_open_files", "editor_symbol"]));
    const [diagnostics, open, symbol] = toolResults(1);
    expect(diagnostics).toContain("\"y\" is not defined");
    expect(diagnostics).toContain("app.py:2:7: error");
    expect(open).toContain("app.py");
    expect(symbol).toContain("x = 1");
    expect(asked).toEqual([{ action: "definition", p: fs.realpathSync(file), line: 1, character: 6 }]);
  });

  it("an unsaved buffer: read_file reads it, edit_file edits it, the disk holds both and the document is reloaded", async () => {
    const file = path.join(t.work, "app.py");
    fs.writeFileSync(file, "x = 1\n");
    const host = await ready([
      { toolCalls: [["r1", "read_file", JSON.stringify({ path: "app.py" })]] },
      { toolCalls: [["e1", "edit_file", JSON.stringify({ path: "app.py", edits: [{ old_string: "y = 2", new_string: "y = 3" }] })]] },
      { text: "Changed y." },
    ]);
    const doc = host.openDocument(file, "x = 1\ny = 2\n", "python");
    expect(doc.dirty).toBe(true);
    host.fromPage({ type: "send", text: "make y three" });
    await approveNext(host, "edit_file");
    await turnEnded(host);
    expect(toolResults(1)[0]).toContain("y = 2");
    expect(toolResults(1)[0]).toContain("unsaved");
    expect(fs.readFileSync(file, "utf8")).toBe("x = 1\ny = 3\n");
    await host.until("the reload", () => host.reverted.length === 1);
    expect(host.reverted).toEqual([file]);
    expect(doc).toMatchObject({ text: "x = 1\ny = 3\n", dirty: false });
    expect(host.shown.filter((s) => s.kind === "warn")).toEqual([]);
  });

  it("a file written while its document took newer unsaved text: a warning names it, the document keeps the user's text", async () => {
    const file = path.join(t.work, "notes.txt");
    fs.writeFileSync(file, "old\n");
    const host = await ready([
      { toolCalls: [["w1", "write_file", JSON.stringify({ path: "notes.txt", content: "from the model\n" })]] },
      { text: "Written." },
    ]);
    const doc = host.openDocument(file);
    host.fromPage({ type: "send", text: "rewrite the notes" });
    // The user types while the question is open: the daemon read no unsaved text for this batch.
    await approveNext(host, "write_file", () => host.typeInto(file, "mine, unsaved\n"));
    await turnEnded(host);
    expect(fs.readFileSync(file, "utf8")).toBe("from the model\n");
    await host.until("the warning", () => host.shown.some((s) => s.kind === "warn"));
    const warning = host.shown.find((s) => s.kind === "warn")!;
    expect(warning.message).toBe("notes.txt was changed on disk by turnstoned, but it has unsaved changes in the editor: they were kept, and the editor does not show the new text (saving would overwrite it).");
    expect(warning.actions).toEqual(["Reload from Disk"]);
    expect(doc).toMatchObject({ text: "mine, unsaved\n", dirty: true });
    expect(host.reverted).toEqual([]);
  });

  it("a command that changed a file under unsaved text: the same warning; a clean document is left to VS Code", async () => {
    const dirty = path.join(t.work, "dirty.txt");
    const clean = path.join(t.work, "clean.txt");
    fs.writeFileSync(dirty, "old\n");
    fs.writeFileSync(clean, "old\n");
    const host = await ready([
      { toolCalls: [["b1", "bash", JSON.stringify({ command: "sleep 0.05; echo new > dirty.txt; echo new > clean.txt" })]] },
      { text: "Done." },
    ]);
    const doc = host.openDocument(dirty, "mine\n");
    host.openDocument(clean);
    host.fromPage({ type: "send", text: "renew both" });
    await approveNext(host, "bash");
    await turnEnded(host);
    expect(fs.readFileSync(dirty, "utf8")).toBe("new\n");
    await host.until("the warning", () => host.shown.some((s) => s.kind === "warn"));
    expect(host.shown.filter((s) => s.kind === "warn").map((s) => s.message)).toEqual([
      "dirty.txt was changed on disk by a command turnstoned ran, but it has unsaved changes in the editor: they were kept, and the editor does not show the new text (saving would overwrite it).",
    ]);
    expect(doc).toMatchObject({ text: "mine\n", dirty: true });
    expect(host.reverted).toEqual([]);
  });

  it("the project's instruction files are named at the top of the chat, a cut one marked; a click opens it", async () => {
    fs.mkdirSync(path.join(t.work, ".git"));
    fs.writeFileSync(path.join(t.work, "AGENTS.md"), "Run the tests with `make test`.\n".repeat(1200));
    const host = await ready([{ text: "Noted." }]);
    host.fromPage({ type: "send", text: "hello" });
    await host.until("the instructions", () => (last(host, "instructions")?.files.length ?? 0) > 0);
    const files = last(host, "instructions")!.files;
    expect(files.map((f) => [f.path, f.label, f.truncated])).toEqual([[path.join(fs.realpathSync(t.work), "AGENTS.md"), "AGENTS.md", true]]);
    expect(files[0]!.chars).toBeLessThanOrEqual(32000);
    host.fromPage({ type: "openFile", path: files[0]!.path });
    await host.until("the file opened", () => host.opened.includes(files[0]!.path));
    // A resumed session names them again.
    await turnEnded(host);
    host.fromPage({ type: "ready" });
    await host.until("the instructions again", () => host.posted.filter((m) => m.type === "instructions").length === 2);
    expect(last(host, "instructions")!.files.map((f) => f.label)).toEqual(["AGENTS.md"]);
  });

  it("after restarts that remembered nothing: Undo turn on a prompt from before works by its turnId; the undo offers Redo", { timeout: 60000 }, async () => {
    const a = path.join(t.work, "a.txt");
    fs.writeFileSync(a, "zero\n");
    const host = await ready([{ toolCalls: [["w1", "write_file", JSON.stringify({ path: "a.txt", content: "one\n" })]] }, { text: "Wrote one." }], AUTO);
    host.fromPage({ type: "send", text: "write one" });
    await turnEnded(host);
    const turnId = pageState(host.posted).entries.find((e): e is UserEntry => e.kind === "user")!.turnId!;
    expect(turnId).toBeTruthy();

    /** Another window (nothing in its workspace state), with a daemon of its own. */
    const reload = async (from: FakeHost) => {
      await from.daemons.at(-1)!.stop();
      const next = new FakeHost(from.settingsValue, { name: "work", path: t.work });
      launch(t, next);
      next.fromPage({ type: "ready" });
      await next.until("the turn's changes", () => pageState(next.posted).entries.some((e) => e.kind === "changes"), 20000);
      return next;
    };
    const changes = (h: FakeHost) => pageState(h.posted).entries.find((e): e is ChangesEntry => e.kind === "changes")!;
    const undos = (h: FakeHost) => pageState(h.posted).entries.filter((e): e is UndoEntry => e.kind === "undo");

    const second = await reload(host);
    expect(pageState(second.posted).entries.find((e): e is UserEntry => e.kind === "user")?.turnId).toBe(turnId);
    expect(changes(second)).toMatchObject({ turnId, files: [{ kind: "modify", status: "changed" }] });
    second.respond = (s) => (s.kind === "pick" ? "Undo the files, keep the conversation" : undefined);
    second.fromPage({ type: "undoTurn", turnId });
    await second.until("the undo", () => undos(second).length === 1);
    expect(fs.readFileSync(a, "utf8")).toBe("zero\n");

    // Again, after the undo: the turn's files are undone, not changed, and Redo is offered.
    const third = await reload(second);
    await third.until("the undo from undoneBy", () => undos(third).length === 1);
    expect(changes(third).files.map((f) => f.status)).toEqual(["undone"]);
    const undo = undos(third)[0]!;
    expect(undo).toMatchObject({ turnIds: [turnId], redone: false });
    third.fromPage({ type: "redo", undoId: undo.undoId });
    await third.until("the redo", () => undos(third)[0]?.redone === true);
    expect(fs.readFileSync(a, "utf8")).toBe("one\n");
    expect(changes(third).files.map((f) => f.status)).toEqual(["changed"]);
  });
});

describe("undo and redo of the latest, from the command palette", () => {
  it("Undo the Last Turn rewinds it; after a reload with nothing left to click, Redo the Last Undo brings it back", { timeout: 60000 }, async () => {
    const a = path.join(t.work, "a.txt");
    fs.writeFileSync(a, "zero\n");
    const host = await ready([{ toolCalls: [["w1", "write_file", JSON.stringify({ path: "a.txt", content: "one\n" })]] }, { text: "Wrote one." }], AUTO);
    host.fromPage({ type: "send", text: "write one" });
    await turnEnded(host);
    const sessionId = pageState(host.posted).sessionId!;
    host.respond = (s) => (s.kind === "pick" && s.message === "Undo the last turn" ? "Undo and rewind the conversation" : undefined);
    await host.run("turnstoned.undoLastTurn");
    expect(fs.readFileSync(a, "utf8")).toBe("zero\n");
    expect(last(host, "draft")).toEqual({ type: "draft", text: "write one" });

    await host.daemons[0]!.stop();
    const next = new FakeHost(host.settingsValue, { name: "work", path: t.work });
    launch(t, next);
    next.fromPage({ type: "ready" });
    await next.until("the session", () => last(next, "reset")?.sessionId === sessionId, 20000);
    expect(pageState(next.posted).entries).toEqual([]);
    await next.run("turnstoned.redoLastUndo");
    expect(fs.readFileSync(a, "utf8")).toBe("one\n");
    await next.until("the conversation back", () => pageState(next.posted).entries.some((e) => e.kind === "user"));
    expect(pageState(next.posted).entries.find((e): e is UserEntry => e.kind === "user")).toMatchObject({ text: "write one" });
  });
});
