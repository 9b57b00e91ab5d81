/** Modes, sandbox badges, a turn's changes, undo and redo in the chat state; diffs taken back; prompts' turns. */
import { describe, expect, it } from "vitest";
import { amended } from "../../src/approvals";
import { applyApproval, applyChanges, applyEvent, applyUndo, confirmUserMessage, addUserMessage, emptyState, fromHistory, keepFile, redone, type ChangesEntry, type ToolEntry, type UndoEntry } from "../../src/chat/state";
import type { DaemonEvent, Item } from "../../src/protocol";
import { modePickItems, modeStatus, sandboxLine } from "../../src/status";
import { matchTurns, reverseApply } from "../../src/undo";

const S = "s1";
const base = { sessionId: S, turnId: "t1" };
const run = (events: DaemonEvent[], state = emptyState(S)) => events.reduce(applyEvent, state);

describe("approval modes and the sandbox in the chat", () => {
  it("a mode change updates the header's mode and leaves a notice", () => {
    const state = emptyState(S);
    state.mode = { mode: "plan", pending: false, sandbox: { available: true } };
    run([{ method: "session/modeChanged", params: { sessionId: S, mode: "auto", previous: "plan" } }], state);
    expect(state.mode).toEqual({ mode: "auto", pending: false, sandbox: { available: true } });
    expect(state.entries.at(-1)).toMatchObject({ kind: "notice", noticeKind: "mode", text: "Approval mode: plan → auto" });
  });

  it("how a command runs rides on its card; an escalation's reason on its approval", () => {
    const state = run([{ method: "item/started", params: { ...base, itemId: "c1", item: { type: "toolCall", id: "c1", callId: "c1", tool: "bash", header: "bash: touch x", needsApproval: false, status: "pending", isError: false, sandbox: "sandboxed" } } }]);
    expect((state.entries[0] as ToolEntry).sandbox).toBe("sandboxed");
    applyApproval(state, { ...base, cycleId: "k", items: [{ callId: "c2", tool: "bash", header: "bash: curl x", needsApproval: true, approvalLabel: "bash", sandbox: "escalated", escalation: "the sandbox stopped a connection; the model: it needs the network" }] });
    const card = state.entries[1] as ToolEntry;
    expect([card.sandbox, card.escalation]).toEqual(["escalated", "the sandbox stopped a connection; the model: it needs the network"]);
    // The completed item keeps what only the approval said.
    run([{ method: "item/completed", params: { ...base, itemId: "c2", item: { type: "toolCall", id: "c2", callId: "c2", tool: "bash", header: "bash: curl x", needsApproval: true, status: "completed", isError: false, sandbox: "escalated" } } }], state);
    expect([card.sandbox, card.escalation]).toEqual(["escalated", "the sandbox stopped a connection; the model: it needs the network"]);
  });

  it("the status bar item and the quick pick say what each mode runs unasked", () => {
    expect(modeStatus({ mode: "auto", pending: false, sandbox: { available: true } }).text).toBe("$(shield) Auto");
    expect(modeStatus({ mode: null, pending: true, sandbox: null }).tooltip).toContain("The next chat starts in this mode");
    expect(modeStatus({ mode: "auto", pending: false, sandbox: { available: false, detail: "no Landlock" } }).tooltip).toContain("commands ask");
    const items = modePickItems({ mode: "plan", pending: false, sandbox: null });
    expect(items.map((i) => [i.value, i.description])).toEqual([["read-only", ""], ["auto", ""], ["full-access", ""], ["plan", "current"]]);
    expect(sandboxLine({ available: true, detail: "Landlock ABI 7" })).toBe("sandbox: on (Landlock ABI 7)");
    expect(sandboxLine({ available: false })).toBe("sandbox: none, so commands ask in auto mode");
  });
});

describe("a turn's changes, undo and redo", () => {
  const files = [{ path: "/w/a.txt", kind: "modify" as const }, { path: "/w/b.txt", kind: "create" as const }];
  const done = (checkpoint: object): DaemonEvent => ({ method: "turn/completed", params: { ...base, status: "completed", checkpoint } });

  it("a turn that changed files ends with its changes; one that changed none shows nothing", () => {
    const state = run([done({ files, undoable: true }), { method: "turn/completed", params: { ...base, turnId: "t2", status: "completed", checkpoint: { files: [] } } }]);
    const changes = state.entries.filter((e): e is ChangesEntry => e.kind === "changes");
    expect(changes.map((c) => [c.turnId, c.files.map((f) => [f.path, f.kind, f.status])])).toEqual([["t1", [["/w/a.txt", "modify", "changed"], ["/w/b.txt", "create", "changed"]]]]);
    // A workspace that cannot be checkpointed says so once.
    run([done({ undoable: false, note: "too big" }), { method: "turn/completed", params: { ...base, turnId: "t3", status: "completed", checkpoint: { undoable: false, note: "too big" } } }], state);
    expect(state.entries.filter((e) => e.kind === "changes" && e.note === "too big")).toHaveLength(1);
  });

  it("keep, undo of one file, redo; the daemon's notice and the host's account are one undo", () => {
    const state = run([done({ files })]);
    keepFile(state, "t1", "/w/b.txt");
    applyUndo(state, { undoId: "u1", turnIds: ["t1"], restored: ["/w/a.txt"], kept: [], rewound: false, redone: false });
    run([{ method: "session/notice", params: { sessionId: S, kind: "undo", text: "The user undid your last turn", data: { undoId: "u1", turnIds: ["t1"], restored: ["/w/a.txt"], rewound: false } } }], state);
    const changes = state.entries.find((e): e is ChangesEntry => e.kind === "changes")!;
    expect(changes.files.map((f) => f.status)).toEqual(["undone", "kept"]);
    expect(state.entries.filter((e) => e.kind === "undo")).toHaveLength(1);
    run([{ method: "session/notice", params: { sessionId: S, kind: "redo", text: "The user redid", data: { undoId: "u1", turnIds: ["t1"], restored: ["/w/a.txt"] } } }], state);
    expect(changes.files.map((f) => f.status)).toEqual(["changed", "kept"]);
    expect((state.entries.find((e) => e.kind === "undo") as UndoEntry).redone).toBe(true);
    expect(redone(state, "u1")).toBe(state);
  });

  it("a redone undo told by the host first still puts the files back", () => {
    const state = run([done({ files })]);
    applyUndo(state, { undoId: "u2", turnIds: ["t1"], restored: ["/w/a.txt", "/w/b.txt"], kept: [], rewound: false, redone: false });
    applyUndo(state, { undoId: "u2", turnIds: ["t1"], restored: ["/w/a.txt", "/w/b.txt"], kept: [], rewound: false, redone: true });
    expect(state.entries.find((e): e is ChangesEntry => e.kind === "changes")!.files.map((f) => f.status)).toEqual(["changed", "changed"]);
  });

  it("prompts know their turns: from the daemon's answer live, from the host in history", () => {
    const state = addUserMessage(emptyState(S), "fix it", false);
    confirmUserMessage(state, "fix it", false, "t9");
    expect(state.entries[0]).toMatchObject({ kind: "user", turnId: "t9" });
    const items: Item[] = [{ type: "userMessage", id: "m1", text: "fix it" }, { type: "agentMessage", id: "a1", text: "done" }];
    expect(fromHistory(S, "", items, false, { m1: "t9" }).entries[0]).toMatchObject({ turnId: "t9" });
    expect(fromHistory(S, "", items).entries[0]).toMatchObject({ turnId: null });
    applyChanges(state, "t9", [{ path: "/w/x", kind: "delete", binary: true }], true, null);
    expect(state.entries.at(-1)).toMatchObject({ kind: "changes", files: [{ path: "/w/x", kind: "delete", binary: true, status: "changed" }] });
  });

  it("history prompts matched to this window's turns in order, rewound ones skipped", () => {
    const items: Item[] = [
      { type: "userMessage", id: "m1", text: "a" }, { type: "userMessage", id: "m2", text: "elsewhere" },
      { type: "userMessage", id: "m3", text: "b" }, { type: "userMessage", id: "m4", text: "c", queued: true },
    ];
    expect(matchTurns(items, [{ turnId: "t1", text: "a" }, { turnId: "t2", text: "b", rewound: "u1" }, { turnId: "t3", text: "b" }, { turnId: "t4", text: "c" }])).toEqual({ m1: "t1", m3: "t3" });
  });
});

describe("diffs taken back", () => {
  it("the text before a unified diff, from the text after it", () => {
    const before = Array.from({ length: 20 }, (_, i) => `line ${i + 1}\n`).join("");
    const after = before.replace("line 2\n", "line two\n").replace("line 15\n", "line fifteen\nand more\n");
    const diff = "diff --git a/f.txt b/f.txt\nindex 1..2 100644\n--- a/f.txt\n+++ b/f.txt\n@@ -1,5 +1,5 @@\n line 1\n-line 2\n+line two\n line 3\n line 4\n line 5\n@@ -12,7 +12,8 @@\n line 12\n line 13\n line 14\n-line 15\n+line fifteen\n+and more\n line 16\n line 17\n line 18\n";
    expect(reverseApply(diff, after)).toBe(before);
    expect(reverseApply(diff, after.replace("line 3\n", "changed\n"))).toBeNull();
  });

  it("creations, deletions and a last line without a line break", () => {
    expect(reverseApply("--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n", "one\ntwo\n")).toBe("");
    expect(reverseApply("--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n", "a\nc")).toBe("a\nb");
    expect(reverseApply("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n\\ No newline at end of file\n", "b")).toBe("a\n");
  });
});

describe("an edited review diff amends the approval", () => {
  const params = { ...base, cycleId: "k", items: [
    { callId: "w1", tool: "write_file", header: "write a", needsApproval: true, approvalLabel: "write_file" },
    { callId: "w2", tool: "write_file", header: "write b", needsApproval: true, approvalLabel: "write_file" },
  ] };
  const edited = (id: string) => (id === "w1" ? { path: "a.txt", content: "mine\n" } : undefined);

  it("an approved call gets the edited text; a denied one or one with its own arguments does not", () => {
    expect(amended(params, { decision: "approve" }, edited)).toEqual({ decision: "approve", calls: { w1: { decision: "approve", arguments: { path: "a.txt", content: "mine\n" } } } });
    expect(amended(params, { decision: "deny" }, edited)).toEqual({ decision: "deny" });
    const own = { decision: "approve" as const, calls: { w1: { decision: "approve" as const, arguments: { path: "a.txt", content: "typed\n" } } } };
    expect(amended(params, own, edited)).toBe(own);
    expect(amended(params, { decision: "deny", calls: { w1: { decision: "always" } } }, edited).calls?.w1).toEqual({ decision: "always", arguments: { path: "a.txt", content: "mine\n" } });
    expect(amended(params, { decision: "approve" }, null)).toEqual({ decision: "approve" });
  });
});
