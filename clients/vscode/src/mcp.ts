/** MCP servers at a glance: quick-pick rows and refresh summaries. */
import type { PickItem } from "./host";
import type { McpChange, McpServerInfo } from "./protocol";

const ICON: Record<string, string> = { connected: "$(pass-filled)", connecting: "$(sync~spin)", failed: "$(error)", disabled: "$(circle-slash)", untrusted: "$(shield)" };

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

export function serverCounts(s: McpServerInfo): string {
  return [plural(s.tools ?? 0, "tool"), plural(s.resources ?? 0, "resource"), plural(s.prompts ?? 0, "prompt")].join(", ");
}

export type McpPick = { kind: "server"; name: string } | { kind: "refreshAll" };

/** One row per server (status, counts, error or origin), then "Refresh all". */
export function mcpPickItems(servers: McpServerInfo[]): PickItem<McpPick>[] {
  const rows: PickItem<McpPick>[] = servers.map((s) => {
    const row: PickItem<McpPick> = {
      label: `${ICON[s.status] ?? "$(circle-outline)"} ${s.name}`,
      description: `${s.status} · ${serverCounts(s)}`,
      value: { kind: "server", name: s.name },
    };
    const detail = s.error ? `error: ${s.error}` : s.origin ? `from ${s.origin}` : "";
    if (detail) row.detail = detail;
    return row;
  });
  rows.push({ label: "$(refresh) Refresh all servers", description: "rediscover tools, reconnect failed servers", value: { kind: "refreshAll" } });
  return rows;
}

/** "github: +2 tools (a, b), −1 (c)" lines for a refresh answer. */
export function describeChanges(changes: McpChange[]): string {
  if (!changes.length) return "No MCP servers are configured.";
  return changes
    .map((c) => {
      if (c.error) return `${c.server}: ${c.error}`;
      const added = c.added ?? [];
      const removed = c.removed ?? [];
      if (!added.length && !removed.length) return `${c.server}: unchanged`;
      const parts = [];
      if (added.length) parts.push(`+${added.length} (${added.join(", ")})`);
      if (removed.length) parts.push(`−${removed.length} (${removed.join(", ")})`);
      return `${c.server}: ${parts.join(", ")}`;
    })
    .join("; ");
}

/** "MCP 2/3" for the status bar ("" with no servers). */
export function mcpSummary(servers: { servers?: number; connected?: number }): string {
  const total = servers.servers ?? 0;
  return total ? `MCP ${servers.connected ?? 0}/${total}` : "";
}
