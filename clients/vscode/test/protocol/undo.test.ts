/**
 * Undo and review of turns in the extension, against the real daemon: a turn that wrote files
 * ends with its changes; a file's diff opens before ↔ now; undoing a file, then the turn,
 * puts the files back on disk and redo brings them back; a file the user changed in between
 * is asked about (keep mine keeps it); an earlier prompt is edited and rerun, rewound or
 * forked. And the review diff's proposed side edited before approving: only what is left
 * there is written.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import type { ChangesEntry, UndoEntry, UserEntry } from "../../src/chat/state";
import type { ToWebview } from "../../src/messages/chat";
import { appTests, last, launch, pageState, sawEvent, settings, withModel } from "../support/app";
import { writeConfig } from "../support/daemon";
import { FakeHost } from "../support/fakeHost";

const t = appTests();
const AUTO = '[approvals]\nmode = "auto"\n';

async function ready(replies: unknown[], config?: string): Promise<FakeHost> {
  if (config) writeConfig(t.home, config);
  const model = await withModel(t, replies);
  const host = new FakeHost(settings({ baseUrl: model.baseUrl }), { name: "work", path: t.work });
  launch(t, host);
  await host.until("the daemon", () => host.status.text.includes("scripted"));
  host.fromPage({ type: "ready" });
  await host.until("features", () => last(host, "features")?.checkpoints === true);
  return host;
}

const turnEnded = (host: FakeHost, n = 1) => host.until(`turn ${n} to end`, () => host.posted.filter((m) => m.type === "event" && m.event.method === "turn/completed").length >= n, 30000);
const write = (id: string, file: string, content: string) => [id, "write_file", JSON.stringify({ path: file, content })];
const changes = (host: FakeHost) => pageState(host.posted).entries.filter((e): e is ChangesEntry => e.kind === "changes");
const undos = (host: FakeHost) => pageState(host.posted).entries.filter((e): e is UndoEntry => e.kind === "undo");
/** The undo entries the page shows (told by the host or the daemon), by how many there are. */
const untilUndos = (host: FakeHost, n: number, redone = 0) => host.until(`${n} undos, ${redone} redone`, () => undos(host).length === n && undos(host).filter((u) => u.redone).length === redone);

describe("undo and review of turns, against the real daemon", () => {
  it("a turn's changes: diff, undo a file, redo, undo the turn, a conflict kept as mine", { timeout: 60000 }, async () => {
    const a = path.join(t.work, "a.txt");
    const b = path.join(t.work, "b.txt");
    fs.writeFileSync(a, "zero\n");
    const host = await ready([
      { toolCalls: [write("w1", "a.txt", "one\n"), write("w2", "b.txt", "new file\n")] },
      { text: "Wrote both." },
    ], AUTO);
    host.fromPage({ type: "send", text: "write the files" });
    await turnEnded(host);
    expect([fs.readFileSync(a, "utf8"), fs.readFileSync(b, "utf8")]).toEqual(["one\n", "new file\n"]);
    const real = fs.realpathSync(t.work);
    const [ra, rb] = [path.join(real, "a.txt"), path.join(real, "b.txt")];
    const [entry] = changes(host);
    expect(entry?.files.map((f) => [f.path, f.kind, f.status])).toEqual([[ra, "modify", "changed"], [rb, "create", "changed"]]);
    const turnId = entry!.turnId;
    expect(pageState(host.posted).entries.find((e): e is UserEntry => e.kind === "user")?.turnId).toBe(turnId);

    // Diff: the file before the turn beside the file on disk.
    host.fromPage({ type: "showChange", turnId, path: ra });
    await host.until("the diff", () => host.diffs.length === 1);
    const diff = host.diffs[0]!;
    expect([await host.read(diff.left), diff.right, diff.title]).toEqual(["zero\n", `file://${ra}`, "a.txt: before the turn ↔ now (turnstoned)"]);

    // Undo one file: it alone goes back; Redo brings it back.
    host.fromPage({ type: "undoFile", turnId, path: ra });
    await untilUndos(host, 1);
    expect([fs.readFileSync(a, "utf8"), fs.existsSync(b)]).toEqual(["zero\n", true]);
    expect(changes(host)[0]!.files.map((f) => f.status)).toEqual(["undone", "changed"]);
    const fileUndo = undos(host)[0]!;
    expect(fileUndo).toMatchObject({ turnIds: [turnId], restored: [ra], rewound: false, redone: false });
    host.fromPage({ type: "redo", undoId: fileUndo.undoId });
    await untilUndos(host, 1, 1);
    expect(fs.readFileSync(a, "utf8")).toBe("one\n");
    expect(changes(host)[0]!.files.map((f) => f.status)).toEqual(["changed", "changed"]);

    // Undo the turn, keeping the conversation: both files go back; Redo: both return.
    host.respond = (s) => (s.kind === "pick" && s.message === "Undo this turn" ? "Undo the files, keep the conversation" : undefined);
    host.fromPage({ type: "undoTurn", turnId });
    await untilUndos(host, 2, 1);
    expect([fs.readFileSync(a, "utf8"), fs.existsSync(b)]).toEqual(["zero\n", false]);
    expect(host.shown.find((s) => s.kind === "pick")?.actions).toEqual(["Undo and rewind the conversation", "Undo the files, keep the conversation"]);
    host.fromPage({ type: "redo", undoId: undos(host)[1]!.undoId });
    await untilUndos(host, 2, 2);
    expect([fs.readFileSync(a, "utf8"), fs.readFileSync(b, "utf8")]).toEqual(["one\n", "new file\n"]);

    // The user changes a.txt after the turn: undoing asks about it; "Keep Mine" keeps it.
    fs.writeFileSync(a, "mine\n");
    host.respond = (s) => (s.kind === "pick" ? "Undo the files, keep the conversation" : s.kind === "modal" ? "Keep Mine" : undefined);
    host.fromPage({ type: "undoTurn", turnId });
    await untilUndos(host, 3, 2);
    const asked = host.shown.filter((s) => s.kind === "modal");
    expect(asked.map((s) => [s.message, s.actions])).toEqual([["a.txt changed since the turn: keep your version?", ["Keep Mine", "Take Checkpoint", "Show Diff"]]]);
    expect(asked[0]!.detail).toContain("-one");
    expect(asked[0]!.detail).toContain("+mine");
    expect([fs.readFileSync(a, "utf8"), fs.existsSync(b)]).toEqual(["mine\n", false]);
    // The daemon's notice may come before the answer that says what was kept.
    await host.until("the kept file", () => (undos(host)[2]?.kept.length ?? 0) > 0);
    expect(undos(host)[2]).toMatchObject({ restored: [rb], kept: [ra], redone: false });
  });

  it("a conflict: Show Diff opens the turn's version beside yours, then Take Checkpoint undoes it", async () => {
    const a = path.join(t.work, "a.txt");
    fs.writeFileSync(a, "zero\n");
    const host = await ready([{ toolCalls: [write("w1", "a.txt", "one\n")] }, { text: "Done." }], AUTO);
    host.fromPage({ type: "send", text: "write a" });
    await turnEnded(host);
    fs.writeFileSync(a, "mine\n");
    let shown = 0;
    host.respond = (s) => (s.kind === "pick" ? "Undo the files, keep the conversation" : s.kind === "modal" ? (shown++ === 0 ? "Show Diff" : "Take Checkpoint") : undefined);
    host.fromPage({ type: "undoTurn", turnId: changes(host)[0]!.turnId });
    await untilUndos(host, 1);
    const diff = host.diffs.at(-1)!;
    expect([await host.read(diff.left), diff.right, diff.title]).toEqual(["one\n", `file://${path.join(fs.realpathSync(t.work), "a.txt")}`, "a.txt: the turn's version ↔ yours (turnstoned)"]);
    expect(fs.readFileSync(a, "utf8")).toBe("zero\n");

    // A window reload: the prompt keeps its turn and the turn's changes are listed again.
    const turnId = changes(host)[0]!.turnId;
    const reloaded = new FakeHost(host.settingsValue, { name: "work", path: t.work });
    reloaded.mementos = host.mementos;
    await host.daemons[0]!.stop();
    launch(t, reloaded);
    reloaded.fromPage({ type: "ready" });
    await reloaded.until("the turn's changes", () => changes(reloaded).length === 1);
    const page = pageState(reloaded.posted);
    expect(page.entries.find((e): e is UserEntry => e.kind === "user")?.turnId).toBe(turnId);
    expect(page.entries.map((e) => e.kind)).toEqual(["user", "tool", "agent", "changes"]);
    expect(changes(reloaded)[0]!.files.map((f) => [path.basename(f.path), f.kind])).toEqual([["a.txt", "modify"]]);
  });

  it("undo and rewind: files and conversation go back, the prompt returns to the composer; redo brings both back", async () => {
    const a = path.join(t.work, "a.txt");
    fs.writeFileSync(a, "zero\n");
    const host = await ready([{ toolCalls: [write("w1", "a.txt", "one\n")] }, { text: "Wrote one." }], AUTO);
    host.fromPage({ type: "send", text: "write one" });
    await turnEnded(host);
    host.respond = (s) => (s.kind === "pick" ? "Undo and rewind the conversation" : undefined);
    host.fromPage({ type: "undoTurn", turnId: changes(host)[0]!.turnId });
    await host.until("the draft", () => Boolean(last(host, "draft")));
    expect(last(host, "draft")).toEqual({ type: "draft", text: "write one" });
    expect(fs.readFileSync(a, "utf8")).toBe("zero\n");
    expect(pageState(host.posted).entries.map((e) => e.kind)).toEqual(["undo"]);
    host.fromPage({ type: "redo", undoId: undos(host)[0]!.undoId });
    await host.until("the conversation back", () => pageState(host.posted).entries.some((e) => e.kind === "user"));
    expect(fs.readFileSync(a, "utf8")).toBe("one\n");
    const page = pageState(host.posted);
    expect(page.entries.map((e) => e.kind)).toEqual(["user", "tool", "agent", "changes", "undo"]);
    expect(page.entries.find((e): e is UserEntry => e.kind === "user")?.turnId).toBe(changes(host)[0]!.turnId);
  });

  it("an earlier prompt edited and rerun: rewound here, then forked into a new chat", { timeout: 60000 }, async () => {
    const a = path.join(t.work, "a.txt");
    fs.writeFileSync(a, "zero\n");
    const host = await ready([
      { toolCalls: [write("w1", "a.txt", "one\n")] }, { text: "Wrote one." },
      { toolCalls: [write("w2", "a.txt", "two\n")] }, { text: "Wrote two." },
      { toolCalls: [write("w3", "a.txt", "three\n")] }, { text: "Wrote three." },
    ], AUTO);
    host.fromPage({ type: "send", text: "write one" });
    await turnEnded(host);
    const first = changes(host)[0]!.turnId;
    const sessionId = pageState(host.posted).sessionId!;

    // Rerun here: the turn is undone and rewound, the edited prompt sent in its place.
    host.fromPage({ type: "rerun", turnId: first, text: "write two", how: "rewind" });
    await turnEnded(host, 2);
    expect(fs.readFileSync(a, "utf8")).toBe("two\n");
    const page = pageState(host.posted);
    expect(page.sessionId).toBe(sessionId);
    expect(page.entries.filter((e): e is UserEntry => e.kind === "user").map((e) => e.text)).toEqual(["write two"]);
    const history = await host.daemons[0]!.raw.sendRequest("session/resume", { sessionId }) as { items: { type: string; text?: string }[] };
    expect(history.items.filter((i) => i.type === "userMessage").map((i) => i.text)).toEqual(["write two"]);
    // The rewound undo stays on the page with its Redo.
    expect(undos(host)).toMatchObject([{ turnIds: [first], rewound: true, redone: false }]);

    // Rerun in a new chat: a fork before that prompt, the file put back, the edited prompt sent there.
    const second = pageState(host.posted).entries.find((e): e is UserEntry => e.kind === "user")!.turnId!;
    host.fromPage({ type: "rerun", turnId: second, text: "write three", how: "fork" });
    await turnEnded(host, 3);
    expect(fs.readFileSync(a, "utf8")).toBe("three\n");
    const forked = pageState(host.posted).sessionId!;
    expect(forked).not.toBe(sessionId);
    expect(last(host, "reset")).toMatchObject({ sessionId: forked });
    const tree = () => host.trees.get("turnstoned.sessions")!();
    await host.until("the fork in the sessions tree", () => tree().some((n) => n.id === forked));
    const original = await host.daemons[0]!.raw.sendRequest("session/resume", { sessionId }) as { items: { type: string; text?: string }[] };
    expect(original.items.filter((i) => i.type === "userMessage").map((i) => i.text)).toEqual(["write two"]);
  });

  it("the review diff's proposed side edited (one of two hunks reverted): only the other hunk is written", { timeout: 60000 }, async () => {
    const old = Array.from({ length: 20 }, (_, i) => `line ${i + 1}\n`).join("");
    fs.writeFileSync(path.join(t.work, "f.txt"), old);
    const host = await ready([
      { toolCalls: [["r1", "read_file", JSON.stringify({ path: "f.txt" })]] },
      { toolCalls: [["e1", "edit_file", JSON.stringify({ path: "f.txt", edits: [{ old_string: "line 2\n", new_string: "line two\n" }, { old_string: "line 15\n", new_string: "line fifteen\n" }] })]] },
      { text: "Renamed." },
    ]);
    host.fromPage({ type: "send", text: "rename two lines" });
    await host.until("the approval", () => Boolean(last(host, "approval")), 30000);
    const cycle = last(host, "approval")!.cycle;
    const callId = cycle.items.find((i) => i.tool === "edit_file")!.callId;
    host.fromPage({ type: "review", callId });
    await host.until("the diff", () => host.diffs.length === 1);
    const { left, right } = host.diffs[0]!;
    expect(right.startsWith("turnstoned-proposed:")).toBe(true);
    expect(host.editable.has("turnstoned-proposed")).toBe(true);
    const proposed = await host.read(right);
    expect(proposed).toBe(old.replace("line 2\n", "line two\n").replace("line 15\n", "line fifteen\n"));
    expect(await host.read(left)).toBe(old);

    // The user reverts the first hunk in the diff editor's proposed side, then approves.
    const kept = old.replace("line 15\n", "line fifteen\n");
    host.editedDocuments.set(right, kept);
    await host.run("turnstoned.review.approve");
    await host.until("the turn to end", () => sawEvent(host, "turn/completed"), 30000);
    expect(fs.readFileSync(path.join(t.work, "f.txt"), "utf8")).toBe(kept);
    expect(host.closedEditors).toEqual([right]);
    const done = host.posted.find((m): m is Extract<ToWebview, { type: "event" }> => m.type === "event" && m.event.method === "item/completed" && m.event.params.item.type === "toolCall" && m.event.params.item.callId === callId);
    const item = done?.event.method === "item/completed" && done.event.params.item.type === "toolCall" ? done.event.params.item : undefined;
    expect(item?.status).toBe("completed");
    expect(JSON.parse(item?.arguments ?? "{}")).toEqual({ path: "f.txt", content: kept });
    expect(JSON.parse(item?.originalArguments ?? "{}")).toMatchObject({ path: "f.txt" });
  });
});
