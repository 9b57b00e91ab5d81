import { describe, expect, it } from "vitest";
import { addUserMessage, applyApproval, applyEvent, clearCycle, confirmUserMessage, decideCall, dropUserMessage, emptyState, fromHistory, toolCard, walk, type ToolEntry } from "../../src/chat/state";
import type { DaemonEvent } from "../../src/protocol";
import type { ToolCallItem } from "../../src/protocol";

const S = "s1";
const base = { sessionId: S, turnId: "t1" };
function tool(status: ToolCallItem["status"], extra: Partial<ToolCallItem> = {}): ToolCallItem {
  return { type: "toolCall", id: "c1", callId: "c1", tool: "bash", header: "bash: make", preview: "make", needsApproval: true, status, isError: false, ...extra };
}
function run(events: DaemonEvent[], state = emptyState(S)) {
  for (const e of events) state = applyEvent(state, e);
  return state;
}

describe("chat state", () => {
  it("streams an answer and takes the completed item as authoritative", () => {
    const state = run([
      { method: "turn/started", params: base },
      { method: "item/started", params: { ...base, itemId: "m1", item: { type: "agentMessage", id: "m1", text: "" } } },
      { method: "item/agentMessage/delta", params: { ...base, itemId: "m1", delta: "Hel" } },
      { method: "item/agentMessage/delta", params: { ...base, itemId: "m1", delta: "lo" } },
    ]);
    expect(state.entries).toEqual([{ kind: "agent", id: "m1", text: "Hello", done: false }]);
    expect(state.turnId).toBe("t1");
    run([{ method: "item/completed", params: { ...base, itemId: "m1", item: { type: "agentMessage", id: "m1", text: "Hello!" } } }], state);
    expect(state.entries[0]).toEqual({ kind: "agent", id: "m1", text: "Hello!", done: true });
  });

  it("ignores other sessions' events", () => {
    const state = run([{ method: "item/agentMessage/delta", params: { sessionId: "other", turnId: "t", itemId: "m", delta: "x" } }]);
    expect(state.entries).toEqual([]);
  });

  it("tool card: approval buttons, live output, final state, decision word", () => {
    const state = run([{ method: "item/started", params: { ...base, itemId: "c1", item: tool("pending") } }]);
    applyApproval(state, { ...base, cycleId: "k1", items: [{ callId: "c1", tool: "bash", header: "bash: make", needsApproval: true, approvalLabel: "bash" }] });
    const card = state.entries[0] as ToolEntry;
    expect(card.approval).toEqual({ cycleId: "k1", label: "bash", siblings: 0, lead: true, split: false });
    run([
      { method: "approval/resolved", params: { ...base, cycleId: "k1", callIds: ["c1"], decision: "approve" } },
      { method: "item/toolCall/outputDelta", params: { ...base, itemId: "c1", callId: "c1", chunk: "line 1\n" } },
    ], state);
    expect([card.approval, card.decision, card.status, card.output]).toEqual([null, "approved", "running", "line 1\n"]);
    run([{ method: "item/completed", params: { ...base, itemId: "c1", item: tool("failed", { output: "exit 2", isError: true, effectStatus: "unknown" }) } }], state);
    expect([card.status, card.output, card.isError, card.effectStatus, card.decision]).toEqual(["failed", "exit 2", true, "unknown", "approved"]);
  });

  it("an approval that overtakes item/started draws its card; siblings share the lead's buttons", () => {
    const state = applyApproval(emptyState(S), { ...base, cycleId: "k", items: [
      { callId: "a", tool: "write_file", header: "write a", needsApproval: true, approvalLabel: "write_file" },
      { callId: "b", tool: "read_file", header: "read b", needsApproval: false, approvalLabel: "read_file" },
      { callId: "c", tool: "bash", header: "bash: x", needsApproval: true, approvalLabel: "bash", error: "blocked" },
    ] });
    const cards = state.entries as ToolEntry[];
    expect(cards.map((c) => [c.callId, c.approval?.lead, c.approval?.siblings, c.error])).toEqual([["a", true, 1, null], ["c", false, 1, "blocked"]]);
    expect(state.cycles).toEqual({ k: ["a", "c"] });
    clearCycle(state, "k", "cancelled");
    expect(cards.map((c) => [c.approval, c.decision])).toEqual([[null, "withdrawn"], [null, "withdrawn"]]);
  });

  it("turn end: usage kept, queued flags dropped, errors get a hint, interrupts a notice", () => {
    const state = addUserMessage(emptyState(S), "more", true);
    run([{ method: "turn/completed", params: { ...base, status: "failed", error: { kind: "rateLimited", message: "429" }, usage: { promptTokens: 5, completionTokens: 2, totalTokens: 7 } } }], state);
    expect(state.entries[0]).toMatchObject({ kind: "user", queued: false });
    expect(state.entries[1]).toMatchObject({ kind: "error", errorKind: "rateLimited", message: "429", hint: expect.stringContaining("wait") });
    expect(state.lastUsage?.totalTokens).toBe(7);
    run([{ method: "turn/completed", params: { ...base, status: "interrupted", error: { kind: "interrupted", message: "x" } } }], state);
    expect(state.entries[2]).toMatchObject({ kind: "notice", text: "Interrupted." });
  });

  it("redraws history", () => {
    const state = fromHistory(S, "t", [
      { type: "userMessage", id: "u", text: "hi" },
      { type: "reasoning", id: "r", text: "think" },
      tool("completed", { output: "ok" }),
      { type: "notice", id: "n", kind: "backgroundShell/exited", text: "done" },
      { type: "agentMessage", id: "m", text: "bye" },
    ]);
    expect(state.entries.map((e) => e.kind)).toEqual(["user", "reasoning", "tool", "notice", "agent"]);
    expect(state.entries.every((e) => !("done" in e) || e.done)).toBe(true);
  });

  it("split cycles: each call its own buttons, its own decision word; file changes ride on the card", () => {
    const fileChange = { path: "/w/a.txt", kind: "modify" as const, unifiedDiff: "@@ -1 +1 @@\n-a\n+b\n" };
    const state = applyApproval(emptyState(S), { ...base, cycleId: "k", items: [
      { callId: "a", tool: "edit_file", header: "edit a", needsApproval: true, approvalLabel: "edit_file", fileChange },
      { callId: "b", tool: "bash", header: "bash: x", needsApproval: true, approvalLabel: "bash" },
    ] }, true);
    const [a, b] = state.entries as ToolEntry[];
    expect([a!.approval?.split, b!.approval?.split, a!.fileChange]).toEqual([true, true, fileChange]);
    decideCall(state, "k", "a", "approve");
    expect([a!.approval, a!.decision]).toEqual([null, "approved; waiting for the other calls"]);
    expect(b!.approval).not.toBeNull();
    run([{ method: "approval/resolved", params: { ...base, cycleId: "k", callIds: ["a", "b"], decision: "deny", calls: { a: "approve", b: "deny" } } }], state);
    expect([a!.decision, b!.decision, b!.approval]).toEqual(["approved", "denied", null]);
  });

  it("verdicts ride on the card: the rule table's with the request, the judge's when it arrives", () => {
    const state = run([{ method: "item/started", params: { ...base, itemId: "c1", item: tool("pending") } }]);
    const verdict = { risk: "high" as const, recommendation: "review" as const, rule: "recursive-delete", reason: "deletes files recursively (rm -rf build)" };
    applyApproval(state, { ...base, cycleId: "k", judgePending: true, items: [
      { callId: "c1", tool: "bash", header: "bash: rm -rf build", needsApproval: true, approvalLabel: "bash", verdict, grantRules: [], policy: "ask label='bash'" },
    ] });
    const card = state.entries[0] as ToolEntry;
    expect([card.verdict, card.judging, card.grantRules, card.policy]).toEqual([verdict, true, [], "ask label='bash'"]);
    const judged = { risk: "high" as const, recommendation: "review" as const, rule: "judge", reason: "deletes the build", tier: "llm" as const, confidence: 0.8 };
    run([{ method: "approval/verdicts", params: { ...base, cycleId: "k", verdicts: { c1: judged } } }], state);
    expect([card.judgeVerdict, card.judging]).toEqual([judged, false]);
    // The completed item keeps what only the request said, and says what ran.
    run([{ method: "item/completed", params: { ...base, itemId: "c1", item: tool("completed", { verdict, arguments: '{"command": "rm -rf build/tmp"}', originalArguments: '{"command": "rm -rf build"}' }) } }], state);
    expect([card.verdict, card.judgeVerdict, card.grantRules, card.originalArguments]).toEqual([verdict, judged, [], '{"command": "rm -rf build"}']);
  });

  it("calls that ran unasked say why", () => {
    const state = run([
      { method: "item/started", params: { ...base, itemId: "c1", item: tool("pending") } },
      { method: "item/completed", params: { ...base, itemId: "c1", item: tool("completed", { autoApproved: true, autoApproveReason: "grant: bash:@read-only" }) } },
    ]);
    expect((state.entries[0] as ToolEntry).autoApproved).toBe("grant: bash:@read-only");
    const other = run([{ method: "item/started", params: { ...base, itemId: "c2", item: { ...tool("pending"), id: "c2", callId: "c2" } } }]);
    applyApproval(other, { ...base, cycleId: "k", items: [
      { callId: "c2", tool: "bash", header: "ls", needsApproval: false, approvalLabel: "bash", autoApproved: true, autoApproveReason: "policy: allow label='bash'" },
      { callId: "c3", tool: "bash", header: "make", needsApproval: true, approvalLabel: "bash", grantRules: ["bash:=make"] },
    ] });
    const [auto, asked] = other.entries as ToolEntry[];
    expect([auto!.autoApproved, auto!.approval, asked!.grantRules]).toEqual(["policy: allow label='bash'", null, ["bash:=make"]]);
  });

  it("keeps the context fill from session/usage", () => {
    const state = run([{ method: "session/usage", params: { sessionId: S, contextTokens: 3000, contextWindow: 32768 } }]);
    expect(state.context).toEqual({ tokens: 3000, window: 32768, estimated: false });
  });

  it("a sent message shows at once; the daemon's answer sets queued; a failed send takes it back", () => {
    const state = addUserMessage(emptyState(S), "first", false);
    addUserMessage(state, "second", true);
    confirmUserMessage(state, "second", false);
    expect(state.entries.map((e) => e.kind === "user" && [e.text, e.queued])).toEqual([["first", false], ["second", false]]);
    confirmUserMessage(state, "replayed", true);
    expect(state.entries[2]).toMatchObject({ text: "replayed", queued: true });
    dropUserMessage(state, "second");
    expect(state.entries.map((e) => e.kind === "user" && e.text)).toEqual(["first", "replayed"]);
  });
});

describe("task agents nested under their call", () => {
  const agent = "task-1";
  const nested = { ...base, parentCallId: agent };
  const agentCall = (status: ToolCallItem["status"], extra: Partial<ToolCallItem> = {}): ToolCallItem =>
    ({ type: "toolCall", id: agent, callId: agent, tool: "task_agent", header: "⚙ task_agent", preview: "Count the files.", needsApproval: true, status, isError: false, ...extra });
  const inner = (status: ToolCallItem["status"], extra: Partial<ToolCallItem> = {}): ToolCallItem =>
    ({ type: "toolCall", id: "b1", callId: "b1", tool: "bash", header: "⚙ bash: ls | wc -l", preview: "ls | wc -l", needsApproval: true, status, isError: false, ...extra });

  it("items, deltas, output and approvals of the agent land in its card; the parent runs", () => {
    const state = run([{ method: "item/started", params: { ...base, itemId: agent, item: agentCall("pending") } }]);
    applyApproval(state, { ...base, cycleId: "k0", items: [{ callId: agent, tool: "task_agent", header: "⚙ task_agent", needsApproval: true, approvalLabel: "task_agent" }] });
    run([
      { method: "approval/resolved", params: { ...base, cycleId: "k0", callIds: [agent], decision: "approve" } },
      { method: "item/started", params: { ...nested, itemId: "b1", item: inner("pending") } },
    ], state);
    const parent = state.entries[0] as ToolEntry;
    expect(state.entries).toHaveLength(1);
    expect(parent.status).toBe("running");
    applyApproval(state, { ...nested, cycleId: "k1", items: [{ callId: "b1", tool: "bash", header: "⚙ bash: ls | wc -l", needsApproval: true, approvalLabel: "bash" }] });
    const card = parent.children[0] as ToolEntry;
    expect(card.approval).toMatchObject({ cycleId: "k1", lead: true });
    expect(state.cycles.k1).toEqual(["b1"]);
    run([
      { method: "approval/resolved", params: { ...nested, cycleId: "k1", callIds: ["b1"], decision: "approve" } },
      { method: "item/toolCall/outputDelta", params: { ...nested, itemId: "b1", callId: "b1", chunk: "2\n" } },
      { method: "item/completed", params: { ...nested, itemId: "b1", item: inner("completed", { output: "2\n" }) } },
      { method: "item/started", params: { ...nested, itemId: "m1", item: { type: "agentMessage", id: "m1", text: "" } } },
      { method: "item/agentMessage/delta", params: { ...nested, itemId: "m1", delta: "Two files." } },
      { method: "item/completed", params: { ...nested, itemId: "m1", item: { type: "agentMessage", id: "m1", text: "Two files." } } },
      { method: "item/completed", params: { ...base, itemId: agent, item: agentCall("completed", { output: "Two files." }) } },
    ], state);
    expect(state.entries).toHaveLength(1);
    expect([card.approval, card.decision, card.status, card.output]).toEqual([null, "approved", "completed", "2\n"]);
    expect(parent.children.map((e) => e.kind)).toEqual(["tool", "agent"]);
    expect(parent.children[1]).toMatchObject({ text: "Two files.", done: true });
    expect([parent.status, parent.output, parent.decision]).toEqual(["completed", "Two files.", "approved"]);
  });

  it("an agent's question that overtakes its item draws the card under the call; decided per call", () => {
    const state = run([{ method: "item/started", params: { ...base, itemId: agent, item: agentCall("running") } }]);
    applyApproval(state, { ...nested, cycleId: "k2", items: [
      { callId: "w1", tool: "write_file", header: "write a", needsApproval: true, approvalLabel: "write_file" },
      { callId: "w2", tool: "write_file", header: "write b", needsApproval: true, approvalLabel: "write_file" },
    ] }, true);
    const parent = state.entries[0] as ToolEntry;
    const [w1, w2] = parent.children as ToolEntry[];
    expect([w1!.approval?.split, w2!.approval?.split]).toEqual([true, true]);
    decideCall(state, "k2", "w1", "deny");
    expect(w1!.decision).toBe("denied; waiting for the other calls");
    clearCycle(state, "k2", "deny", { w1: "deny", w2: "approve" });
    expect([w1!.decision, w2!.decision, w2!.approval]).toEqual(["denied", "approved", null]);
  });

  it("without its parent card, an agent's item still shows (at the top level)", () => {
    const state = run([{ method: "item/started", params: { ...nested, itemId: "b1", item: inner("pending") } }]);
    expect(state.entries.map((e) => e.kind)).toEqual(["tool"]);
  });

  it("the turn's end clears nested questions and finishes nested text", () => {
    const state = run([
      { method: "item/started", params: { ...base, itemId: agent, item: agentCall("running") } },
      { method: "item/agentMessage/delta", params: { ...nested, itemId: "m1", delta: "Let me" } },
    ]);
    applyApproval(state, { ...nested, cycleId: "k3", items: [{ callId: "b1", tool: "bash", header: "bash", needsApproval: true, approvalLabel: "bash" }] });
    run([{ method: "turn/completed", params: { ...base, status: "interrupted" } }], state);
    const parent = state.entries[0] as ToolEntry;
    expect([...walk(state.entries)].filter((e) => e.kind === "tool").map((e) => (e as ToolEntry).approval)).toEqual([null, null]);
    expect(parent.children[0]).toMatchObject({ kind: "agent", done: true });
  });

  it("a preview opened by a call (nested or not) is offered on its card", () => {
    const state = run([
      { method: "item/started", params: { ...base, itemId: agent, item: agentCall("running") } },
      { method: "item/started", params: { ...nested, itemId: "p1", item: { ...inner("pending"), id: "p1", callId: "p1", tool: "open_preview" } } },
    ]);
    const open = { sessionId: S, callId: "p1", previewId: "ab12", kind: "markdown" as const, title: "Notes", source: "/w/notes.md", contentType: "text/markdown", size: 10 };
    run([{ method: "preview/open", params: open }, { method: "preview/open", params: open }], state);
    expect(toolCard(state, "p1")!.previews).toEqual([{ previewId: "ab12", title: "Notes", kind: "markdown" }]);
  });
});

describe("notices, watches and compaction", () => {
  it("a watch's report leads with its name and reason; notify with its title", () => {
    const state = run([
      { method: "session/notice", params: { sessionId: S, kind: "watch", text: '[Watch "ci" — poll #1/100, 10s elapsed]\n$ cat ci.json\n{"status": "passed"}', data: { name: "ci", reason: "condition met: data[\"status\"] == \"passed\"", pollCount: 1 } } },
      { method: "session/notice", params: { sessionId: S, kind: "notify", text: "The build is green.", data: { title: "CI", channels: ["editor"] } } },
      { method: "turn/started", params: { sessionId: S, turnId: "t-woken" } },
    ]);
    expect(state.entries).toMatchObject([
      { kind: "notice", noticeKind: "watch", headline: '“ci”: condition met: data["status"] == "passed"' },
      { kind: "notice", noticeKind: "notify", headline: "CI", text: "The build is green." },
    ]);
    // A turn the daemon started itself (no turn/start) runs like any other.
    expect(state.turnId).toBe("t-woken");
    const history = fromHistory(S, "t", [{ type: "notice", id: "n1", kind: "watch", text: '[Watch "ci" — poll #1/100]\nrest' }]);
    expect(history.entries[0]).toMatchObject({ kind: "notice", headline: '[Watch "ci" — poll #1/100]' });
  });

  it("session/compacted: a divider with its figures, and the context fill follows", () => {
    const state = run([{ method: "session/compacted", params: { sessionId: S, turnId: null, trigger: "manual", mode: "summary", messages: 4, contextTokensBefore: 7400, contextTokensAfter: 1200, contextWindow: 8192, text: "Context compacted: 4 earlier messages were summarised.", summary: "The user asked for greetings." } }]);
    expect(state.entries[0]).toEqual({ kind: "compaction", id: "compacted-1", text: "Context compacted: 4 earlier messages were summarised.", summary: "The user asked for greetings.", figures: { trigger: "manual", mode: "summary", messages: 4, before: 7400, after: 1200, window: 8192, cost: null } });
    expect(state.context).toEqual({ tokens: 1200, window: 8192, estimated: true });
    const paid = run([{ method: "session/compacted", params: { sessionId: S, turnId: null, trigger: "manual", mode: "summary", messages: 4, contextTokensBefore: 7400, contextTokensAfter: 1200, contextWindow: 8192, text: "", usage: { promptTokens: 900, completionTokens: 40, totalTokens: 940 } } }]);
    expect(paid.entries[0]).toMatchObject({ kind: "compaction", figures: { cost: 940 } });
  });

  it("a resumed history shows the compacted notice as the same divider, without figures", () => {
    const state = fromHistory(S, "t", [
      { type: "userMessage", id: "u1", text: "hello 1" },
      { type: "notice", id: "n", kind: "compacted", text: "Context compacted: …", detail: "summary text" },
      { type: "userMessage", id: "u2", text: "hello 2" },
    ]);
    expect(state.entries[1]).toEqual({ kind: "compaction", id: "n", text: "Context compacted: …", summary: "summary text", figures: null });
  });
});

describe("the live plan and the input's mentions and commands", () => {
  it("a turn's plan goes right after its prompt and is replaced in place; a resumed plan is replaced by the next turn's only after its prompt", async () => {
    const { applyPlan, addUserMessage, emptyState, fromHistory } = await import("../../src/chat/state");
    let s = addUserMessage(emptyState("s"), "first", false, "t1");
    s.entries.push({ kind: "agent", id: "a1", text: "ok", done: true });
    s = applyPlan(s, "t1", [{ step: "a", status: "in_progress" }]);
    s = applyPlan(s, "t1", [{ step: "a", status: "done" }, { step: "b", status: "pending" }]);
    expect(s.entries.map((e) => e.kind)).toEqual(["user", "plan", "agent"]);
    s = addUserMessage(s, "second", false, "t2");
    s = applyPlan(s, "t2", [{ step: "c", status: "pending" }]);
    expect(s.entries.map((e) => e.kind)).toEqual(["user", "plan", "agent", "user", "plan"]);
    const resumed = fromHistory("s", "", [{ type: "userMessage", id: "u1", text: "x", turnId: "t9" }, { type: "agentMessage", id: "a", text: "y" }], false, {}, [{ step: "old", status: "done" }]);
    expect(resumed.entries.map((e) => e.kind)).toEqual(["user", "plan", "agent"]);
  });

  it("mentions: @path and @path:a-b after a space, only paths the list offered, each once", async () => {
    const { mentionsIn, mentionAt, slashAt, slashCommand } = await import("../../src/messages/mentions");
    const known = new Set(["notes.txt", "src/app.py"]);
    expect(mentionsIn("see @notes.txt:2-3, @src/app.py. and @nobody or x@notes.txt @notes.txt", known)).toEqual([{ path: "notes.txt", startLine: 2, endLine: 3 }, { path: "src/app.py" }]);
    expect(mentionsIn("@src/app.py:7", known)).toEqual([{ path: "src/app.py", startLine: 7, endLine: 7 }]);
    expect(mentionAt("look at @src/ap", 15)).toEqual({ at: 8, query: "src/ap" });
    expect(mentionAt("look at @notes.txt:1-", 21)).toEqual({ at: 8, query: "notes.txt" });
    expect(mentionAt("mail a@b", 8)).toBeNull();
    expect(slashAt("/com", 4)).toBe("com");
    expect(slashAt("say /com", 8)).toBeNull();
    expect(slashCommand("/mode read-only")).toEqual({ name: "mode", args: "read-only" });
    expect(slashCommand("/x tell me\nmore")).toEqual({ name: "x", args: "tell me\nmore" });
    expect(slashCommand("a /b")).toBeNull();
  });
});
