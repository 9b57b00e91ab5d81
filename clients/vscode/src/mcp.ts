/**
 * MCP servers at a glance: quick-pick rows, refresh summaries, the project-config trust modal,
 * and logging in to HTTP servers that ask for OAuth (protocol 1.14).
 */
import type { TurnstonedClient } from "./client";
import { rpcError, type CancelToken } from "./connection";
import type { Host, PickItem } from "./host";
import { ErrorCode, type McpAuthorizeParams, type McpAuthorizeResponse, type McpChange, type McpServerInfo, type McpServerPreview, type McpServerStatusChanged, type McpTrustRequestParams, type McpTrustResponse } from "./protocol";
import { askTrust, trustFooter, type TrustPrompt } from "./trust";

const ICON: Record<string, string> = { connected: "$(pass-filled)", connecting: "$(sync~spin)", failed: "$(error)", disabled: "$(circle-slash)", untrusted: "$(shield)" };

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

export function serverCounts(s: McpServerInfo): string {
  return [plural(s.tools ?? 0, "tool"), plural(s.resources ?? 0, "resource"), plural(s.prompts ?? 0, "prompt")].join(", ");
}

/** "failed · needs login · 0 tools, …": its status, login state (if it uses OAuth) and counts. */
function serverLine(s: McpServerInfo): string {
  const login = s.needsAuth ? " · needs login" : s.loggedIn ? " · logged in" : "";
  return `${s.status}${login} · ${serverCounts(s)}`;
}

/** Picking a server refreshes it; one that needs a login logs in instead. */
export type McpPick = { kind: "server"; name: string } | { kind: "login"; name: string } | { kind: "refreshAll" };

/** One row per server (status, login state, counts, error or origin), then "Refresh all". */
export function mcpPickItems(servers: McpServerInfo[]): PickItem<McpPick>[] {
  const rows: PickItem<McpPick>[] = servers.map((s) => {
    const row: PickItem<McpPick> = {
      label: `${s.needsAuth ? "$(key)" : ICON[s.status] ?? "$(circle-outline)"} ${s.name}`,
      description: serverLine(s),
      value: { kind: s.needsAuth ? "login" : "server", name: s.name },
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

/**
 * The servers a login or logout is offered for, in order: for a login those that need one
 * first, then the others that run (not disabled, not untrusted); for a logout the logged-in ones.
 */
export function loginCandidates(servers: McpServerInfo[], action: "login" | "logout"): McpServerInfo[] {
  if (action === "logout") return servers.filter((s) => s.loggedIn);
  const runs = servers.filter((s) => s.status !== "disabled" && s.status !== "untrusted");
  return [...runs.filter((s) => s.needsAuth), ...runs.filter((s) => !s.needsAuth)];
}

/**
 * `mcpServer/authorize`: open the login page in the browser, and show its address with "Copy
 * Link" whatever happened (on a remote machine the user opens it themselves). `opened` says
 * whether the browser was asked. The page's address carries no secret, but it is not logged.
 */
export async function showLoginPage(host: Host, params: McpAuthorizeParams): Promise<McpAuthorizeResponse> {
  const opened = await host.openExternal(params.url).catch(() => false);
  host.log(`mcpServer/authorize ${params.server}: ${opened ? "the browser was asked to open the login page" : "no browser opened"}`);
  const why = params.sessionId ? " (a tool call asks for more access)" : "";
  const message = opened
    ? `Log in to MCP server ${params.server} in your browser${why}. If no page opened: ${params.url}`
    : `Open this address to log in to MCP server ${params.server}${why}: ${params.url}`;
  void (opened ? host.info : host.warn).call(host, message, "Copy Link").then(async (choice) => {
    if (choice === "Copy Link") await host.copy(params.url);
  });
  return { opened };
}

/**
 * Logins and logouts the user asks for, and the one notification a server gets when it turns
 * to "needs login" (not while this window runs its login: the login says how it went).
 */
export class McpLogins {
  private readonly needsAuth = new Map<string, boolean>();
  /** The logins this window waits on. */
  private readonly running = new Set<string>();

  constructor(
    private readonly host: Host,
    /** The running client, if the daemon has MCP login (it tells the user otherwise). */
    private readonly client: () => Promise<TurnstonedClient | null>,
  ) {}

  /** What a list answer says: recorded, nothing told. */
  remember(servers: McpServerInfo[]): void {
    for (const s of servers) this.needsAuth.set(s.name, s.needsAuth === true);
  }

  /** `mcpServer/statusChanged`: a server that now needs a login is told once, with "Log In". */
  observe(status: McpServerStatusChanged): void {
    const before = this.needsAuth.get(status.name);
    this.needsAuth.set(status.name, status.needsAuth === true);
    if (status.needsAuth !== true || before === true || this.running.has(status.name)) return;
    void this.host.warn(`MCP server ${status.name} needs you to log in.`, "Log In").then((choice) => {
      if (choice === "Log In") void this.login(status.name);
    });
  }

  /** Log in to server `name` (without one, pick: those needing a login first). */
  async login(name?: string): Promise<void> {
    const client = await this.client();
    if (!client) return;
    const server = name ?? (await this.pick(client, "login"));
    if (!server) return;
    if (this.running.has(server)) {
      void this.host.info(`The login to ${server} waits for your browser: cancel it from its notification.`);
      return;
    }
    this.running.add(server);
    await this.host
      .withProgress(`Logging in to MCP server ${server}: finish in your browser`, (_report, token) => client.mcpLogin(server, token), { cancellable: true })
      .then(
        ({ server: s }) => {
          this.needsAuth.set(s.name, s.needsAuth === true);
          void this.host.info(s.loggedIn === false && s.status === "connected" ? `${s.name} is connected (${serverCounts(s)}): it asks for no login.` : `Logged in to ${s.name} (${serverCounts(s)}).`);
        },
        (err: unknown) => {
          const e = rpcError(err);
          if (e.code === ErrorCode.REQUEST_CANCELLED) void this.host.info(`The login to ${server} was cancelled.`);
          else void this.host.warn(`MCP login to ${server}: ${e.message}`);
        },
      )
      .finally(() => this.running.delete(server));
  }

  /** Forget server `name`'s tokens (without one, pick a logged-in server); it reconnects without them. */
  async logout(name?: string): Promise<void> {
    const client = await this.client();
    if (!client) return;
    const server = name ?? (await this.pick(client, "logout"));
    if (!server) return;
    try {
      const { server: s } = await client.mcpLogout(server);
      this.needsAuth.set(s.name, s.needsAuth === true);
      void this.host.info(`Logged out of ${s.name}: its tokens are forgotten.`);
    } catch (err) {
      void this.host.warn(`MCP logout of ${server}: ${rpcError(err).message}`);
    }
  }

  private async pick(client: TurnstonedClient, action: "login" | "logout"): Promise<string | undefined> {
    const servers = await client.mcpServers();
    this.remember(servers);
    const choices = loginCandidates(servers, action);
    if (!choices.length) {
      void this.host.info(action === "logout" ? "No MCP server is logged in." : "No MCP server to log in to.");
      return undefined;
    }
    return this.host.pick(
      choices.map((s) => ({ label: s.name, description: serverLine(s), value: s.name })),
      { title: action === "logout" ? "Log out of which MCP server?" : "Log in to which MCP server?" },
    );
  }
}
