/** Watches at a glance: quick-pick rows for `watch/list`, and what to do with one. */
import type { TurnstonedClient } from "./client";
import { rpcError } from "./connection";
import type { Host, PickItem } from "./host";
import type { SessionInfo, WatchInfo } from "./protocol";

/** 600 → "10m", 5400 → "1h 30m", 45 → "45s". */
export function every(seconds: number): string {
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${s % 60 ? ` ${s % 60}s` : ""}`;
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  return `${h}h${m ? ` ${m}m` : ""}`;
}

/** "in 4 min", "due now". */
export function until(iso: string | null | undefined, now: Date = new Date()): string {
  if (!iso) return "";
  const seconds = Math.round((new Date(iso).getTime() - now.getTime()) / 1000);
  if (Number.isNaN(seconds)) return "";
  if (seconds <= 0) return "due now";
  return `next in ${every(seconds)}`;
}

/** One row per active watch: its name, schedule and progress; the command and session below. */
export function watchPickItems(watches: WatchInfo[], sessions: SessionInfo[], now: Date = new Date()): PickItem<WatchInfo>[] {
  const titles = new Map(sessions.map((s) => [s.sessionId, s.title?.trim() || "(untitled)"]));
  return watches.map((w) => ({
    label: `$(eye) ${w.name}`,
    description: [`every ${every(w.intervalSeconds)}`, `poll ${w.pollCount ?? 0}/${w.maxPolls}`, until(w.nextPollAt, now)].filter(Boolean).join(" · "),
    detail: [`$ ${w.command}`, w.stopOn ? `stop on: ${w.stopOn}` : "until the output changes", `session: ${titles.get(w.sessionId) ?? w.sessionId.slice(0, 8)}`].join("  ·  "),
    value: w,
  }));
}

export type WatchAction = "cancel" | "session";

export function watchActions(watch: WatchInfo): PickItem<WatchAction>[] {
  return [
    { label: `$(close) Cancel watch “${watch.name}”`, description: "the daemon stops polling it", value: "cancel" },
    { label: "$(comment-discussion) Open its session in the chat", value: "session" },
  ];
}

/** The Watches command: pick an active watch, then cancel it or open its session. */
export async function manageWatches(host: Host, client: TurnstonedClient, sessions: () => Promise<SessionInfo[]>, openSession: (sessionId: string) => Promise<void>): Promise<void> {
  const watches = await client.watches();
  if (!watches.length) {
    void host.info("No watches are active.");
    return;
  }
  const watch = await host.pick(watchPickItems(watches, await sessions()), { title: "Watches", placeHolder: "Pick a watch to cancel it or open its session" });
  if (!watch) return;
  const action = await host.pick(watchActions(watch), { title: `Watch “${watch.name}”` });
  if (action === "session") await openSession(watch.sessionId);
  if (action !== "cancel") return;
  try {
    // Its id names it exactly (a name could be reused after it ended).
    const result = await client.cancelWatch(watch.sessionId, watch.watchId);
    void host.info(result.cancelled ? `Watch “${watch.name}” cancelled.` : `Watch “${watch.name}” had already ended${result.watch.ended ? `: ${result.watch.ended}` : ""}.`);
  } catch (err) {
    void host.warn(`watch/cancel: ${rpcError(err).message}`);
  }
}
