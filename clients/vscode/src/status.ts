/** The status bar item: daemon state, model, MCP servers connected, context fill. */
import type { DaemonState } from "./daemon";
import { mcpSummary } from "./mcp";

export interface StatusView {
  text: string;
  tooltip: string;
}

/** Context fill as a percentage, when the daemon reports it. */
export interface ContextFill {
  tokens: number;
  window: number;
}

export function statusView(state: DaemonState, context: ContextFill | null = null): StatusView {
  switch (state.state) {
    case "starting":
      return { text: "$(sync~spin) turnstoned", tooltip: "turnstoned: starting the daemon…" };
    case "stopped":
      return state.problem
        ? { text: "$(error) turnstoned", tooltip: `${state.problem.message}\n${state.problem.detail}\n\nClick for options.` }
        : { text: "$(circle-slash) turnstoned", tooltip: "turnstoned: the daemon is not running. Click for options." };
    case "ready": {
      const h = state.health;
      const parts = [h.model ?? "no model"];
      const mcp = mcpSummary(h.mcp);
      if (mcp) parts.push(mcp);
      if (context && context.window > 0) parts.push(`ctx ${Math.round((100 * context.tokens) / context.window)}%`);
      const tooltip = [
        `turnstoned ${h.version} (protocol ${h.protocolVersion})`,
        `model: ${h.model ?? "none configured"}`,
        h.configError ? `config error: ${h.configError}` : "",
        `MCP: ${h.mcp.connected ?? 0} of ${h.mcp.servers ?? 0} servers connected, ${h.mcp.tools ?? 0} tools`,
        context ? `context: ${context.tokens} of ${context.window} tokens` : "",
        `sessions: ${h.sessions}, running turns: ${h.runningTurns ?? 0}`,
      ].filter(Boolean).join("\n");
      return { text: `$(${h.configError ? "warning" : "comment-discussion"}) ${parts.join(" · ")}`, tooltip };
    }
  }
}
