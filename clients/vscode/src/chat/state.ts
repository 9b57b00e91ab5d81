/**
 * The chat transcript as the webview shows it: a pure reducer over daemon events, approval
 * requests and history items. No DOM here, so it is tested in Node.
 */
import type { DaemonEvent } from "../protocol";
import type { ModeInfo, UndoInfo } from "../messages/chat";
import type { ApprovalRequestItem, ApprovalRequestParams, ChangedFile, FileChange, FileChangeKind, ImageData, Item, PlanStep, PreviewKind, SandboxUse, SessionCompacted, SessionNotice, ToolCallItem, Usage, Verdict } from "../protocol";
import { errorHint } from "./hints";

/** `turnId`: the turn the prompt started, when known (it can then be undone or rerun). */
export interface UserEntry { kind: "user"; id: string; text: string; queued: boolean; turnId: string | null; images?: ImageData[] }
/**
 * The model's live plan (`update_plan`): one per turn, at the top of it, replaced in place on
 * each update. `turnId` null: the plan `session/resume` gave back.
 */
export interface PlanEntry { kind: "plan"; id: string; turnId: string | null; steps: PlanStep[]; explanation: string }
export interface TextEntry { kind: "agent" | "reasoning"; id: string; text: string; done: boolean }
/** `headline` (a watch's name and reason, a notification's title) leads a long `text`. */
export interface NoticeEntry { kind: "notice"; id: string; noticeKind: string; text: string; headline?: string }
/**
 * Where the older part of the context became a summary. Live (`session/compacted`) it has
 * the figures; from history (a `compacted` notice item) only the line and the summary.
 */
export interface CompactionEntry {
  kind: "compaction";
  id: string;
  text: string;
  summary: string;
  figures: { trigger: string; mode: string; messages: number; before: number; after: number; window: number; cost: number | null } | null;
}
/** A preview the model opened from a tool call (the card offers to show it again). */
export interface PreviewLink { previewId: string; title: string; kind: PreviewKind }
export interface ErrorEntry { kind: "error"; id: string; errorKind: string; message: string; hint: string }

/** One file a turn changed: still as the turn left it, kept by the user, or undone. */
export interface ChangedFileState {
  path: string;
  kind: FileChangeKind;
  binary: boolean;
  status: "changed" | "kept" | "undone";
}

/** "Changes in this turn", at the end of a turn that changed files. */
export interface ChangesEntry {
  kind: "changes";
  id: string;
  turnId: string;
  files: ChangedFileState[];
  undoable: boolean;
  note: string | null;
}

/** An undo (or a per-file undo) of one or more turns; Redo until it is redone. */
export interface UndoEntry extends UndoInfo { kind: "undo"; id: string }

/** The approval a tool card is waiting for. */
export interface CardApproval {
  cycleId: string;
  label: string;
  /** Other gated calls answered together with this one (no per-call decisions). */
  siblings: number;
  /** The first gated card of the cycle carries the cycle-level buttons. */
  lead: boolean;
  /** Each call of the cycle gets its own buttons (per-call decisions, not atomic). */
  split: boolean;
}

export interface ToolEntry {
  kind: "tool";
  id: string;
  callId: string;
  tool: string;
  header: string;
  preview: string;
  arguments: string;
  status: ToolCallItem["status"];
  /** The final output once completed; the live stream before. */
  output: string;
  isError: boolean;
  effectStatus: string | null;
  needsApproval: boolean;
  approval: CardApproval | null;
  /** How the approval ended, shown on the card ("approved", "denied", ...). */
  decision: string | null;
  error: string | null;
  /** The file a write/edit call proposes to change, with its unified diff. */
  fileChange: FileChange | null;
  /** What a task agent run by this call did: its messages and tool calls, in order. */
  children: Entry[];
  previews: PreviewLink[];
  /** How risky the call looks: the daemon's rule table, and its LLM judge when it has one. */
  verdict: Verdict | null;
  judgeVerdict: Verdict | null;
  /** The judge is still rating the call (its verdict follows). */
  judging: boolean;
  /** Why it ran without asking (a grant, a policy, smart approval), or null. */
  autoApproved: string | null;
  /** What the model asked for, when the user edited the call (`arguments` is what ran). */
  originalArguments: string | null;
  /** The rules "always" saves for this call (empty: it asks every time); null when not said. */
  grantRules: string[] | null;
  /** The tool policy that made it ask. */
  policy: string | null;
  /** How a command runs: in the sandbox, outside it, or escalated out of it (1.9). */
  sandbox: SandboxUse | null;
  /** Why the model asks to leave the sandbox (an escalation's approval). */
  escalation: string | null;
}

export type Entry = UserEntry | TextEntry | NoticeEntry | ErrorEntry | ToolEntry | CompactionEntry | ChangesEntry | UndoEntry | PlanEntry;

export interface ChatState {
  sessionId: string | null;
  title: string;
  entries: Entry[];
  /** The running turn, if any. */
  turnId: string | null;
  lastUsage: Usage | null;
  /** How full the context is after the last model call (`session/usage`). */
  context: { tokens: number; window: number; estimated: boolean } | null;
  /** Pending approval cycles by id: the gated call ids of each. */
  cycles: Record<string, string[]>;
  /** The approval mode of the session (or of the next one); null until the host says. */
  mode: ModeInfo | null;
  seq: number;
}

export function emptyState(sessionId: string | null = null, title = ""): ChatState {
  return { sessionId, title, entries: [], turnId: null, lastUsage: null, context: null, cycles: {}, mode: null, seq: 0 };
}

function find<K extends Entry["kind"]>(list: Entry[], id: string, kind: K): Extract<Entry, { kind: K }> | undefined {
  const entry = list.find((e) => e.id === id && e.kind === kind);
  return entry as Extract<Entry, { kind: K }> | undefined;
}

/** Every entry, a task agent's nested ones right after their call's card. */
export function* walk(entries: readonly Entry[]): Generator<Entry> {
  for (const entry of entries) {
    yield entry;
    if (entry.kind === "tool") yield* walk(entry.children);
  }
}

/** The tool card of a call, wherever it is nested. */
export function toolCard(state: ChatState, callId: string): ToolEntry | undefined {
  for (const entry of walk(state.entries)) if (entry.kind === "tool" && entry.callId === callId) return entry;
  return undefined;
}

/**
 * The list an item goes into: a task agent's items (`parentCallId`) under its call's card, or
 * the transcript itself when that card is not known.
 */
function listFor(state: ChatState, parentCallId: string | null | undefined): Entry[] {
  return (parentCallId ? toolCard(state, parentCallId)?.children : undefined) ?? state.entries;
}

function toolEntry(item: ToolCallItem): ToolEntry {
  return {
    kind: "tool",
    id: item.id,
    callId: item.callId,
    tool: item.tool,
    header: item.header || item.tool,
    preview: item.preview ?? "",
    arguments: item.arguments ?? "{}",
    status: item.status,
    output: item.output ?? "",
    isError: item.isError,
    effectStatus: item.effectStatus ?? null,
    needsApproval: item.needsApproval,
    approval: null,
    decision: null,
    error: null,
    fileChange: item.fileChange ?? null,
    verdict: item.verdict ?? null,
    judgeVerdict: item.judgeVerdict ?? null,
    judging: false,
    autoApproved: item.autoApproved ? item.autoApproveReason ?? "approved automatically" : null,
    originalArguments: item.originalArguments ?? null,
    grantRules: null,
    policy: null,
    sandbox: item.sandbox ?? null,
    escalation: null,
    children: [],
    previews: [],
  };
}

/** What an approval request says about a call, onto its card. */
function rate(card: ToolEntry, item: ApprovalRequestItem, judgePending: boolean): void {
  card.verdict = item.verdict ?? card.verdict;
  card.judgeVerdict = item.judgeVerdict ?? card.judgeVerdict;
  card.judging = judgePending && !card.judgeVerdict && item.needsApproval;
  if (item.autoApproved) card.autoApproved = item.autoApproveReason ?? "approved automatically";
  card.grantRules = item.grantRules ?? null;
  card.policy = item.policy ?? null;
  card.sandbox = item.sandbox ?? card.sandbox;
  card.escalation = item.escalation ?? null;
}

function upsertItem(state: ChatState, item: Item, done: boolean, list: Entry[] = state.entries, turns: Record<string, string> = {}): void {
  switch (item.type) {
    case "userMessage":
      // The turn it started: the host's account, else the item's own (1.12).
      list.push({ kind: "user", id: item.id, text: item.text, queued: item.queued ?? false, turnId: turns[item.id] ?? (item.queued ? null : item.turnId ?? null), ...(item.images?.length ? { images: item.images } : {}) });
      return;
    case "agentMessage":
    case "reasoning": {
      const kind = item.type === "agentMessage" ? "agent" : "reasoning";
      const existing = find(list, item.id, kind);
      if (existing) {
        // The completed item is authoritative; deltas only ever preview it.
        if (done || item.text) existing.text = item.text ?? existing.text;
        existing.done = done;
      } else {
        list.push({ kind, id: item.id, text: item.text ?? "", done });
      }
      return;
    }
    case "toolCall": {
      const existing = find(list, item.id, "tool");
      const next = toolEntry(item);
      if (!existing) {
        list.push(next);
        return;
      }
      const streamed = existing.output;
      // What only the approval request said (rules, policy) stays; the item's verdicts win.
      Object.assign(existing, {
        ...next, approval: existing.approval, decision: existing.decision,
        verdict: next.verdict ?? existing.verdict, judgeVerdict: next.judgeVerdict ?? existing.judgeVerdict,
        judging: !done && existing.judging, autoApproved: next.autoApproved ?? existing.autoApproved,
        grantRules: existing.grantRules, policy: existing.policy, children: existing.children, previews: existing.previews,
        sandbox: next.sandbox ?? existing.sandbox, escalation: existing.escalation,
      });
      if (!done && !next.output) existing.output = streamed;
      if (done) existing.approval = null;
      return;
    }
    case "notice":
      if (item.kind === "compacted") list.push({ kind: "compaction", id: item.id, text: item.text, summary: item.detail ?? "", figures: null });
      else list.push(noticeEntry(item.id, item.kind, item.text));
      return;
  }
}

/** A watch report's first line (`[Watch "ci" — poll #3/100, …]`) names it; show that first. */
function noticeEntry(id: string, noticeKind: string, text: string, data?: SessionNotice["data"]): NoticeEntry {
  const entry: NoticeEntry = { kind: "notice", id, noticeKind, text };
  const field = (key: string) => (typeof data?.[key] === "string" ? (data[key] as string) : "");
  if (noticeKind === "watch") {
    const name = field("name");
    const reason = field("reason");
    entry.headline = name ? `“${name}”${reason ? `: ${reason}` : ""}` : (text.split("\n")[0] ?? "");
  } else if (noticeKind === "notify") {
    entry.headline = field("title");
  }
  if (!entry.headline) delete entry.headline;
  return entry;
}

function compactionEntry(id: string, event: SessionCompacted): CompactionEntry {
  return {
    kind: "compaction", id, text: event.text, summary: event.summary ?? "",
    figures: { trigger: event.trigger, mode: event.mode, messages: event.messages, before: event.contextTokensBefore, after: event.contextTokensAfter, window: event.contextWindow, cost: event.usage?.totalTokens ?? null },
  };
}

/** Redraw a session from `session/resume` history; `turns` maps prompts' item ids to their turns. */
export function fromHistory(sessionId: string, title: string, items: Item[], running = false, turns: Record<string, string> = {}, plan?: PlanStep[]): ChatState {
  const state = emptyState(sessionId, title);
  for (const item of items) upsertItem(state, item, true, state.entries, turns);
  if (plan?.length) {
    // The last plan, at the top of the last turn (the one it was made in, as far as history says).
    const last = state.entries.map((e) => e.kind === "user").lastIndexOf(true);
    const user = state.entries[last];
    const entry: PlanEntry = { kind: "plan", id: "plan-resumed", turnId: user?.kind === "user" ? user.turnId : null, steps: plan, explanation: "" };
    state.entries.splice(last + 1, 0, entry);
  }
  state.turnId = running ? "(running)" : null;
  return state;
}

function mine(state: ChatState, sessionId: string | undefined): boolean {
  return sessionId === undefined || sessionId === state.sessionId;
}

/** Apply one daemon notification; events of other sessions are ignored. */
export function applyEvent(state: ChatState, event: DaemonEvent): ChatState {
  if (event.method === "mcpServer/statusChanged") return state;
  if (!mine(state, event.params.sessionId)) return state;
  switch (event.method) {
    case "session/input": {
      // Another client's prompt (1.15), or a running turn's own, replayed on resume.
      const { item, turnId } = event.params;
      if (!find(state.entries, item.id, "user")) upsertItem(state, item, true, state.entries, turnId ? { [item.id]: turnId } : {});
      break;
    }
    case "turn/started":
      state.turnId = event.params.turnId;
      break;
    case "item/started": {
      upsertItem(state, event.params.item, false, listFor(state, event.params.parentCallId));
      // The agent's first step: its call is running (it streams no output of its own).
      const parent = event.params.parentCallId ? toolCard(state, event.params.parentCallId) : undefined;
      if (parent?.status === "pending" && !parent.approval) parent.status = "running";
      break;
    }
    case "item/completed":
      upsertItem(state, event.params.item, true, listFor(state, event.params.parentCallId));
      break;
    case "item/agentMessage/delta":
    case "item/reasoning/delta": {
      const kind = event.method === "item/agentMessage/delta" ? "agent" : "reasoning";
      const list = listFor(state, event.params.parentCallId);
      const entry = find(list, event.params.itemId, kind);
      if (entry) entry.text += event.params.delta;
      else list.push({ kind, id: event.params.itemId, text: event.params.delta, done: false });
      break;
    }
    case "item/toolCall/outputDelta": {
      const entry = find(listFor(state, event.params.parentCallId), event.params.itemId, "tool");
      if (entry && entry.status !== "completed" && entry.status !== "failed") {
        entry.output += event.params.chunk;
        if (entry.status === "pending") entry.status = "running";
      }
      break;
    }
    case "approval/resolved":
      clearCycle(state, event.params.cycleId, event.params.decision, event.params.calls);
      break;
    case "approval/verdicts":
      for (const [callId, verdict] of Object.entries(event.params.verdicts)) {
        const card = toolCard(state, callId);
        if (card) Object.assign(card, { judgeVerdict: verdict, judging: false });
      }
      break;
    case "turn/completed":
      completeTurn(state, event.params);
      break;
    case "session/usage":
      state.context = { tokens: event.params.contextTokens, window: event.params.contextWindow, estimated: event.params.estimated ?? false };
      break;
    case "session/notice": {
      const undo = event.params.kind === "undo" || event.params.kind === "redo" ? undoOfNotice(event.params) : null;
      if (undo && event.params.kind === "undo") applyUndo(state, undo);
      else if (undo) redone(state, undo.undoId, undo.restored);
      else state.entries.push(noticeEntry(`notice-${++state.seq}`, event.params.kind, event.params.text, event.params.data));
      break;
    }
    case "session/modeChanged":
      state.mode = { mode: event.params.mode, pending: false, sandbox: state.mode?.sandbox ?? null };
      state.entries.push({ kind: "notice", id: `notice-${++state.seq}`, noticeKind: "mode", text: `Approval mode: ${event.params.previous} → ${event.params.mode}` });
      break;
    case "session/compacted":
      state.entries.push(compactionEntry(`compacted-${++state.seq}`, event.params));
      state.context = { tokens: event.params.contextTokensAfter, window: event.params.contextWindow, estimated: true };
      break;
    case "plan/updated":
      applyPlan(state, event.params.turnId ?? null, event.params.steps, event.params.explanation ?? "");
      break;
    case "preview/open": {
      const card = toolCard(state, event.params.callId);
      if (card && !card.previews.some((p) => p.previewId === event.params.previewId)) {
        card.previews.push({ previewId: event.params.previewId, title: event.params.title, kind: event.params.kind });
      }
      break;
    }
  }
  return state;
}

/**
 * A turn's plan: the one already shown for the turn is replaced in place; a new one goes at the
 * top of the turn (right after its prompt; the last prompt when the turn is not known yet).
 */
export function applyPlan(state: ChatState, turnId: string | null, steps: PlanStep[], explanation = ""): ChatState {
  const running = turnId ?? (state.turnId && !state.turnId.startsWith("(") ? state.turnId : null);
  const existing = state.entries.find((e): e is PlanEntry => e.kind === "plan" && (e.turnId === running || e.id === `plan-${running}`));
  if (existing) {
    Object.assign(existing, { steps, explanation });
    return state;
  }
  const users = state.entries.map((e, i) => [e, i] as const).filter(([e]) => e.kind === "user");
  const own = users.find(([e]) => e.kind === "user" && running !== null && e.turnId === running) ?? users.at(-1);
  // The last prompt's turn had a plan (from history) and this turn has no prompt of its own yet: replace it.
  const after = own ? own[1] : -1;
  const next = state.entries[after + 1];
  if (next?.kind === "plan" && (next.turnId === null || next.turnId === running || next.id === "plan-resumed")) {
    Object.assign(next, { id: `plan-${running ?? next.turnId ?? "resumed"}`, turnId: running, steps, explanation });
    return state;
  }
  state.entries.splice(after + 1, 0, { kind: "plan", id: `plan-${running ?? `n${++state.seq}`}`, turnId: running, steps, explanation });
  return state;
}

function completeTurn(state: ChatState, done: Extract<DaemonEvent, { method: "turn/completed" }>["params"]): void {
  state.turnId = null;
  state.lastUsage = done.usage ?? state.lastUsage;
  for (const entry of walk(state.entries)) {
    if (entry.kind === "user") entry.queued = false;
    if (entry.kind === "agent" || entry.kind === "reasoning") entry.done = true;
    if (entry.kind === "tool") entry.approval = null;
  }
  state.cycles = {};
  const checkpoint = done.checkpoint;
  if (checkpoint && (checkpoint.files?.length || (checkpoint.undoable === false && checkpoint.note))) {
    applyChanges(state, done.turnId, checkpoint.files ?? [], checkpoint.undoable ?? true, checkpoint.note ?? null);
  }
  if (done.error && done.error.kind !== "interrupted") {
    state.entries.push({ kind: "error", id: `error-${++state.seq}`, errorKind: done.error.kind, message: done.error.message, hint: errorHint(done.error.kind) });
  } else if (done.status === "interrupted") {
    state.entries.push({ kind: "notice", id: `notice-${++state.seq}`, noticeKind: "interrupted", text: "Interrupted." });
  }
}

function cardFor(state: ChatState, item: ApprovalRequestItem, parentCallId?: string | null): ToolEntry {
  const existing = toolCard(state, item.callId);
  if (existing) return existing;
  // The request can overtake the call's item/started; draw the card from the request.
  const entry: ToolEntry = toolEntry({
    type: "toolCall", id: item.callId, callId: item.callId, tool: item.tool, header: item.header,
    preview: item.preview ?? "", needsApproval: item.needsApproval, status: "pending", isError: false,
  });
  listFor(state, parentCallId).push(entry);
  return entry;
}

/**
 * Show an approval request on the cards of the calls it asks about; `split` gives each call
 * its own buttons (the daemon takes per-call decisions and the cycle is not atomic).
 */
export function applyApproval(state: ChatState, cycle: ApprovalRequestParams, split = false): ChatState {
  if (!mine(state, cycle.sessionId)) return state;
  const gated = cycle.items.filter((i) => i.needsApproval);
  for (const item of cycle.items) {
    // Calls that run anyway say why on their cards (they may have none yet).
    const card = toolCard(state, item.callId);
    if (card && !item.needsApproval) rate(card, item, false);
  }
  gated.forEach((item, index) => {
    const card = cardFor(state, item, cycle.parentCallId);
    rate(card, item, cycle.judgePending ?? false);
    card.approval = { cycleId: cycle.cycleId, label: item.approvalLabel, siblings: gated.length - 1, lead: index === 0, split: split && gated.length > 1 };
    card.error = item.error ?? null;
    card.decision = null;
    card.fileChange = item.fileChange ?? card.fileChange;
  });
  state.cycles[cycle.cycleId] = gated.map((i) => i.callId);
  return state;
}

const DECISION_WORDS: Record<string, string> = {
  approve: "approved", always: "approved (always)", deny: "denied", timeout: "timed out",
  cancelled: "withdrawn", auto: "approved automatically",
};

function word(decision: string): string {
  return DECISION_WORDS[decision] ?? decision;
}

/**
 * An approval ended (answered here, resolved by the daemon or withdrawn): drop its buttons.
 * `calls` says what each call got when they were decided one by one.
 */
export function clearCycle(state: ChatState, cycleId: string, decision?: string, calls?: Record<string, string>): ChatState {
  const callIds = new Set(state.cycles[cycleId] ?? []);
  for (const entry of walk(state.entries)) {
    if (entry.kind !== "tool" || (entry.approval?.cycleId !== cycleId && !callIds.has(entry.callId))) continue;
    entry.approval = null;
    const own = calls?.[entry.callId] ?? decision;
    if (own) entry.decision = word(own);
  }
  delete state.cycles[cycleId];
  return state;
}

/** One call of a split cycle was decided; the answer waits for the others. */
export function decideCall(state: ChatState, cycleId: string, callId: string, decision: string): ChatState {
  const card = toolCard(state, callId);
  if (card?.approval?.cycleId === cycleId) {
    card.approval = null;
    card.decision = `${word(decision)}; waiting for the other calls`;
  }
  return state;
}

/** The user's own message, shown as it is sent (the daemon echoes it only in history). */
export function addUserMessage(state: ChatState, text: string, queued: boolean, turnId: string | null = null, images: ImageData[] = []): ChatState {
  state.entries.push({ kind: "user", id: `user-${++state.seq}`, text, queued, turnId, ...(images.length ? { images } : {}) });
  return state;
}

/** The daemon took the message: say whether it waits for the running turn's next step. */
export function confirmUserMessage(state: ChatState, text: string, queued: boolean, turnId?: string): ChatState {
  const mine = [...state.entries].reverse().find((e): e is UserEntry => e.kind === "user" && e.text === text);
  if (!mine) return addUserMessage(state, text, queued, queued ? null : turnId ?? null);
  mine.queued = queued;
  if (turnId && !queued) mine.turnId = turnId;
  return state;
}

/** A turn's changes; a second report of the same turn replaces the first (files keep their status). */
export function applyChanges(state: ChatState, turnId: string, files: ChangedFile[], undoable: boolean, note: string | null): ChatState {
  const old = state.entries.find((e): e is ChangesEntry => e.kind === "changes" && e.turnId === turnId);
  const status = new Map(old?.files.map((f) => [f.path, f.status]));
  const entry: ChangesEntry = {
    kind: "changes", id: `changes-${turnId}`, turnId, undoable, note,
    files: files.map((f) => ({ path: f.path, kind: f.kind, binary: f.binary ?? false, status: status.get(f.path) ?? "changed" })),
  };
  // A workspace that cannot be checkpointed says so once, not after every turn.
  if (!files.length && state.entries.some((e) => e.kind === "changes" && !e.files.length && e.note === note)) return state;
  if (old) state.entries.splice(state.entries.indexOf(old), 1, entry);
  else state.entries.splice(endOfTurn(state, turnId), 0, entry);
  return state;
}

/** Where a turn's entries end: before the next prompt that started another turn (else the end). */
function endOfTurn(state: ChatState, turnId: string): number {
  const start = state.entries.findIndex((e) => e.kind === "user" && e.turnId === turnId);
  if (start < 0) return state.entries.length;
  const next = state.entries.findIndex((e, i) => i > start && e.kind === "user" && e.turnId !== null && e.turnId !== turnId);
  return next < 0 ? state.entries.length : next;
}

/** The user keeps a file as the turn left it (nothing is sent: the buttons go). */
export function keepFile(state: ChatState, turnId: string, path: string): ChatState {
  const file = state.entries.find((e): e is ChangesEntry => e.kind === "changes" && e.turnId === turnId)?.files.find((f) => f.path === path);
  if (file?.status === "changed") file.status = "kept";
  return state;
}

function undoOfNotice(notice: SessionNotice): UndoInfo | null {
  const d = notice.data ?? {};
  if (typeof d.undoId !== "string") return null;
  const strings = (v: unknown) => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []);
  return { undoId: d.undoId, turnIds: strings(d.turnIds), restored: strings(d.restored), kept: [], rewound: d.rewound === true, redone: false };
}

/** The changes entries of these turns, whose files an undo or redo touched. */
function filesOf(state: ChatState, turnIds: readonly string[]): ChangedFileState[] {
  return state.entries.filter((e): e is ChangesEntry => e.kind === "changes" && turnIds.includes(e.turnId)).flatMap((e) => e.files);
}

/** An undo happened (told by the host or the daemon's notice; once per undoId). */
export function applyUndo(state: ChatState, undo: UndoInfo): ChatState {
  const existing = state.entries.find((e): e is UndoEntry => e.kind === "undo" && e.undoId === undo.undoId);
  if (existing) {
    // The host's account has the kept files; the notice's does not.
    if (undo.kept.length) existing.kept = undo.kept;
    if (undo.redone) redone(state, undo.undoId);
  } else {
    state.entries.push({ kind: "undo", id: `undo-${undo.undoId}`, ...undo, turnIds: [...undo.turnIds], restored: [...undo.restored], kept: [...undo.kept] });
  }
  // Told again (after the turn's changes were listed anew), its files are marked again.
  const entry = existing ?? (state.entries.at(-1) as UndoEntry);
  if (!entry.redone) for (const f of filesOf(state, entry.turnIds)) if (entry.restored.includes(f.path)) f.status = "undone";
  return state;
}

/** The undo was redone: its files are as the turns left them again. */
export function redone(state: ChatState, undoId: string, restored: readonly string[] = []): ChatState {
  const entry = state.entries.find((e): e is UndoEntry => e.kind === "undo" && e.undoId === undoId);
  if (!entry || entry.redone) return state;
  entry.redone = true;
  const back = new Set([...entry.restored, ...restored]);
  for (const f of filesOf(state, entry.turnIds)) if (back.has(f.path) && f.status === "undone") f.status = "changed";
  return state;
}

/** The message did not reach the daemon: take it back out of the transcript. */
export function dropUserMessage(state: ChatState, text: string): ChatState {
  const index = state.entries.map((e) => e.kind === "user" && e.text === text).lastIndexOf(true);
  if (index >= 0) state.entries.splice(index, 1);
  return state;
}
