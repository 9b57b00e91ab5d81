/** The sessions tree: what each row shows, computed from `session/list`. */
import type { TreeNode } from "./host";
import type { SessionInfo } from "./protocol";

export const RESUME_COMMAND = "turnstoned.sessions.resume";

function basename(path: string): string {
  const parts = path.split(/[\\/]/).filter(Boolean);
  return parts[parts.length - 1] ?? path;
}

/** "just now", "5 min ago", "3 h ago", or the date. */
export function ago(iso: string, now: Date = new Date()): string {
  const then = new Date(iso);
  const seconds = Math.round((now.getTime() - then.getTime()) / 1000);
  if (Number.isNaN(seconds)) return "";
  if (seconds < 60) return "just now";
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ago`;
  return then.toISOString().slice(0, 10);
}

const ICONS: Record<SessionInfo["status"], string> = { idle: "comment-discussion", running: "sync~spin", closed: "archive" };

function sessionNode(s: SessionInfo, current: string | null, now: Date): TreeNode {
  const title = s.title?.trim() || "(untitled)";
  const mark = s.sessionId === current ? "● " : "";
  const status = s.status === "idle" ? "" : ` · ${s.status}`;
  const coordinator = s.kind === "coordinator";
  return {
    id: s.sessionId,
    label: `${mark}${title}`,
    description: `${coordinator ? "coordinator · " : ""}${basename(s.cwd)} · ${ago(s.updatedAt, now)}${status}`,
    tooltip: `${title}\n${s.cwd}\nmodel: ${s.model ?? "default"}${s.approvalMode ? `\napproval mode: ${s.approvalMode}` : ""}\nstarted ${s.createdAt}\nstatus: ${s.status}${s.parentSessionId ? "\nstarted by a coordinator session" : ""}`,
    icon: coordinator && s.status !== "running" ? "organization" : ICONS[s.status] ?? "comment",
    contextValue: s.status === "closed" ? "session.closed" : "session.open",
    command: { id: RESUME_COMMAND, arg: s.sessionId },
  };
}

/**
 * One row per session, newest first; the one the chat shows is marked. A coordinator's
 * children are listed under it (at the top level when it is not listed).
 */
export function sessionNodes(sessions: SessionInfo[], current: string | null, now: Date = new Date()): TreeNode[] {
  const nodes = new Map(sessions.map((s) => [s.sessionId, sessionNode(s, current, now)]));
  const roots: TreeNode[] = [];
  for (const s of sessions) {
    const node = nodes.get(s.sessionId)!;
    const parent = s.parentSessionId ? nodes.get(s.parentSessionId) : undefined;
    if (parent && parent !== node) (parent.children ??= []).push(node);
    else roots.push(node);
  }
  return roots;
}
