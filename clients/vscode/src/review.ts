/**
 * Edit review: a proposed file change opened in VS Code's diff editor. Both sides are read
 * with the daemon's file-change request, so the diff shows exactly what the approval would
 * write; the diff editor's title bar approves or denies the call. The proposed side can be
 * edited (the diff editor's per-hunk revert included): approved, the call then writes exactly
 * the text the user left there.
 */
import { splittable, type ApprovalBroker } from "./approvals";
import type { Host } from "./host";
import type { DaemonEvent, Decision } from "./protocol";

/** The current side: read-only. */
export const PROPOSAL_SCHEME = "turnstoned-proposal";
/** The proposed side: editable, kept in memory. */
export const PROPOSED_SCHEME = "turnstoned-proposed";
const FILE_TOOLS = new Set(["write_file", "edit_file"]);

export interface ProposalRef {
  sessionId: string;
  callId: string;
  path: string;
  side: "old" | "new";
}

export interface Proposal {
  path: string;
  oldText: string;
  newText: string;
}

/** Reads the whole proposed change of a pending call. */
export type ProposalReader = (sessionId: string, callId: string) => Promise<Proposal>;

/** `turnstoned-proposal:/abs/path.ts?session=…&call=…&side=old` (`turnstoned-proposed:` for the new side) */
export function proposalUri(ref: ProposalRef): string {
  const path = ref.path.startsWith("/") ? ref.path : `/${ref.path}`;
  const encodedPath = path.split("/").map(encodeURIComponent).join("/");
  const query = new URLSearchParams({ session: ref.sessionId, call: ref.callId, side: ref.side });
  return `${ref.side === "new" ? PROPOSED_SCHEME : PROPOSAL_SCHEME}:${encodedPath}?${query.toString()}`;
}

export function parseProposalUri(uri: string): ProposalRef | null {
  const scheme = [PROPOSAL_SCHEME, PROPOSED_SCHEME].find((s) => uri.startsWith(`${s}:`));
  if (!scheme) return null;
  const rest = uri.slice(scheme.length + 1);
  const q = rest.indexOf("?");
  if (q < 0) return null;
  const query = new URLSearchParams(rest.slice(q + 1));
  const sessionId = query.get("session");
  const callId = query.get("call");
  const side = query.get("side");
  if (!sessionId || !callId || (side !== "old" && side !== "new")) return null;
  const path = rest.slice(0, q).replace(/^\/\/\/?/, "/").split("/").map(decodeURIComponent).join("/");
  return { sessionId, callId, path, side };
}

function basename(path: string): string {
  return path.split("/").filter(Boolean).pop() ?? path;
}

export class ReviewController {
  private readonly proposals = new Map<string, Promise<Proposal>>();
  /** The `path` argument of each file call seen (the answer names the file as the call did). */
  private readonly paths = new Map<string, string>();
  /** The proposed side opened for a call, and the text it started with. */
  private readonly proposed = new Map<string, { uri: string; text: string; path: string }>();

  constructor(
    private readonly host: Host,
    private readonly broker: ApprovalBroker,
    private readonly read: ProposalReader,
    private readonly perCallDecisions: () => boolean,
  ) {
    broker.onChange((change) => {
      if (change.kind === "cleared") this.forgetCycle(change.cycleId);
    });
    broker.amend = (callId) => this.editedArguments(callId);
  }

  /** Item notifications: the path each file call was given. */
  observe(event: DaemonEvent): void {
    if (event.method !== "item/started" && event.method !== "item/completed") return;
    const item = event.params.item;
    if (item.type !== "toolCall" || !FILE_TOOLS.has(item.tool)) return;
    try {
      const path = (JSON.parse(item.arguments ?? "{}") as { path?: unknown }).path;
      if (typeof path === "string") this.paths.set(item.callId, path);
    } catch { /* no arguments to read */ }
    if (event.method === "item/completed") this.paths.delete(item.callId);
  }

  /**
   * The call's arguments when the user changed its proposed side: the file's whole final text
   * under the path the call named (the daemon writes exactly that, for edit_file too).
   */
  editedArguments(callId: string): Record<string, unknown> | undefined {
    const shown = this.proposed.get(callId);
    if (!shown) return undefined;
    const text = this.host.documentText(shown.uri);
    if (text === undefined || text === shown.text) return undefined;
    return { path: this.paths.get(callId) ?? shown.path, content: text };
  }

  /** The diffs opened for each pending cycle, closed when the cycle ends. */
  private readonly opened = new Map<string, { key: string; uri: string }[]>();

  private forgetCycle(cycleId: string): void {
    for (const { key, uri } of this.opened.get(cycleId) ?? []) {
      this.proposals.delete(key);
      this.proposed.delete(key.slice(key.indexOf("/") + 1));
      void this.host.closeEditorsOf(uri);
    }
    this.opened.delete(cycleId);
  }

  private proposal(sessionId: string, callId: string): Promise<Proposal> {
    const key = `${sessionId}/${callId}`;
    let p = this.proposals.get(key);
    if (!p) {
      p = this.read(sessionId, callId);
      this.proposals.set(key, p);
      p.catch(() => this.proposals.delete(key));
    }
    return p;
  }

  /** Serve a side of the diff (the virtual document provider calls this). */
  async provide(uri: string): Promise<string> {
    const ref = parseProposalUri(uri);
    if (!ref) return "";
    const proposal = await this.proposal(ref.sessionId, ref.callId);
    return ref.side === "old" ? proposal.oldText : proposal.newText;
  }

  /** Open the diff editor for a pending edit. */
  async open(sessionId: string, callId: string): Promise<void> {
    let proposal: Proposal;
    try {
      proposal = await this.proposal(sessionId, callId);
    } catch (err) {
      void this.host.warn(`The proposed change is no longer pending (${err instanceof Error ? err.message : String(err)}).`);
      return;
    }
    const left = proposalUri({ sessionId, callId, path: proposal.path, side: "old" });
    const right = proposalUri({ sessionId, callId, path: proposal.path, side: "new" });
    const cycle = this.broker.cycleOfCall(callId);
    if (!this.proposed.has(callId)) this.proposed.set(callId, { uri: right, text: proposal.newText, path: proposal.path });
    if (cycle) {
      const list = this.opened.get(cycle.cycleId) ?? [];
      list.push({ key: `${sessionId}/${callId}`, uri: right });
      this.opened.set(cycle.cycleId, list);
    }
    await this.host.diff(left, right, `${basename(proposal.path)}: current ↔ proposed (turnstoned)`);
  }

  /** Approve or deny the call whose diff is in the active editor (or the given URI). */
  async decide(decision: Decision, uri?: string): Promise<void> {
    const ref = parseProposalUri(uri ?? this.host.activeUri() ?? "");
    const cycle = ref ? this.broker.cycleOfCall(ref.callId) : undefined;
    if (!ref || !cycle) {
      void this.host.info("This change is no longer waiting for approval.");
      return;
    }
    let feedback: string | undefined;
    if (decision === "deny") {
      feedback = await this.host.input({ prompt: "Why not? (the model reads this; optional)" });
      if (feedback === undefined) return;
    }
    // In a batch that can be split, this diff decides its own call; the others keep asking.
    if (splittable(cycle, this.perCallDecisions())) this.broker.decideCall(cycle.cycleId, ref.callId, decision, feedback);
    else this.broker.answer(cycle.cycleId, { decision, ...(feedback ? { feedback } : {}) });
  }
}
