/**
 * Edit review: a proposed file change opened in VS Code's diff editor. Both sides are virtual
 * documents read with the daemon's file-change request, so the diff shows exactly what the
 * approval would write; the diff editor's title bar approves or denies the call.
 */
import { splittable, type ApprovalBroker } from "./approvals";
import type { Host } from "./host";
import type { Decision } from "./protocol";

export const PROPOSAL_SCHEME = "turnstoned-proposal";

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

/** `turnstoned-proposal:/abs/path.ts?session=…&call=…&side=new` */
export function proposalUri(ref: ProposalRef): string {
  const path = ref.path.startsWith("/") ? ref.path : `/${ref.path}`;
  const encodedPath = path.split("/").map(encodeURIComponent).join("/");
  const query = new URLSearchParams({ session: ref.sessionId, call: ref.callId, side: ref.side });
  return `${PROPOSAL_SCHEME}:${encodedPath}?${query.toString()}`;
}

export function parseProposalUri(uri: string): ProposalRef | null {
  if (!uri.startsWith(`${PROPOSAL_SCHEME}:`)) return null;
  const rest = uri.slice(PROPOSAL_SCHEME.length + 1);
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

  constructor(
    private readonly host: Host,
    private readonly broker: ApprovalBroker,
    private readonly read: ProposalReader,
    private readonly perCallDecisions: () => boolean,
  ) {
    broker.onChange((change) => {
      if (change.kind === "cleared") this.forgetCycle(change.cycleId);
    });
  }

  /** The diffs opened for each pending cycle, closed when the cycle ends. */
  private readonly opened = new Map<string, { key: string; uri: string }[]>();

  private forgetCycle(cycleId: string): void {
    for (const { key, uri } of this.opened.get(cycleId) ?? []) {
      this.proposals.delete(key);
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
