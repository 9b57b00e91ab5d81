/** MCP servers at a glance: quick-pick rows, refresh summaries, the project-config trust modal. */
import type { CancelToken } from "./connection";
import type { Host, PickItem } from "./host";
import type { McpChange, McpServerInfo, McpServerPreview, McpTrustRequestParams, McpTrustResponse } from "./protocol";
import { askTrust, trustFooter, type TrustPrompt } from "./trust";

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

/** A word as a shell would need it quoted, so the modal shows the exact command line. */
function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

function previewLines(server: McpServerPreview): string[] {
  const lines = [`● ${server.name} (${server.transport ?? "unknown transport"})`];
  if (server.command) lines.push(`    runs: ${[server.command, ...(server.args ?? [])].map(shellWord).join(" ")}`);
  if (server.url) lines.push(`    connects to: ${server.url}`);
  if (server.cwd) lines.push(`    in: ${server.cwd}`);
  if (server.env?.length) lines.push(`    sets in its environment: ${server.env.join(", ")}`);
  if (server.variables?.length) lines.push(`    receives the values of your environment variables: ${server.variables.join(", ")}`);
  if (server.problem) lines.push(`    will not run: ${server.problem}`);
  return lines;
}

/** The modal for `mcpServer/requestTrust`: every command, URL and variable, exactly as written. */
export function trustPrompt(request: McpTrustRequestParams): TrustPrompt {
  const n = request.servers.length;
  const message = request.previouslyTrusted
    ? `${request.configPath} changed since you trusted it. Start its ${n === 1 ? "MCP server" : `${n} MCP servers`}?`
    : `This project's ${request.configPath} wants to start ${n === 1 ? "an MCP server" : `${n} MCP servers`}. Trust it?`;
  const detail = [
    ...request.servers.flatMap(previewLines),
    ...trustFooter("They run with your permissions. Trust only a file you have read; any change to it asks again.", request.hash),
  ].join("\n");
  return { message, detail, trust: "Trust and Start", deny: "Don't Trust" };
}

/** Answer `mcpServer/requestTrust` with the modal. */
export function askMcpTrust(host: Host, request: McpTrustRequestParams, token?: CancelToken): Promise<McpTrustResponse> {
  return askTrust(host, `MCP config ${request.configPath} (${request.hash.slice(0, 12)})`, trustPrompt(request), token);
}
