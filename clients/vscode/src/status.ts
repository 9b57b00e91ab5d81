/** The status bar items: daemon state, model, MCP servers connected, context fill; the approval mode. */
import type { DaemonState } from "./daemon";
import type { PickItem } from "./host";
import { mcpSummary } from "./mcp";
import type { ModeInfo } from "./messages/chat";
import { MODE_ICONS, MODE_LABELS, MODES, modeDescription } from "./messages/modes";
import type { ApprovalMode, SandboxHealth } from "./protocol";

export interface StatusView {
  text: string;
  tooltip: string;
}

/** Context fill as a percentage, when the daemon reports it. */
export interface ContextFill {
  tokens: number;
  window: number;
}

/** `model`: the chat's own model, when it has one (else the daemon's default is shown). */
export function statusView(state: DaemonState, context: ContextFill | null = null, model: string | null = null): StatusView {
  switch (state.state) {
    case "starting":
      return { text: "$(sync~spin) turnstoned", tooltip: "turnstoned: starting the daemon…" };
    case "stopped":
      return state.problem
        ? { text: "$(error) turnstoned", tooltip: `${state.problem.message}\n${state.problem.detail}\n\nClick for options.` }
        : { text: "$(circle-slash) turnstoned", tooltip: "turnstoned: the daemon is not running. Click for options." };
    case "ready": {
      const h = state.health;
      const parts = [model ?? h.model ?? "no model"];
      const mcp = mcpSummary(h.mcp);
      if (mcp) parts.push(mcp);
      if (context && context.window > 0) parts.push(`ctx ${Math.round((100 * context.tokens) / context.window)}%`);
      const tooltip = [
        `turnstoned ${h.version} (protocol ${h.protocolVersion})${h.resident ? ", the resident daemon this user's clients share" : ""}`,
        `model: ${model ?? h.model ?? "none configured"}${model && h.model && model !== h.model ? ` (the daemon's default: ${h.model})` : ""}`,
        h.configError ? `config error: ${h.configError}` : "",
        `MCP: ${h.mcp.connected ?? 0} of ${h.mcp.servers ?? 0} servers connected, ${h.mcp.tools ?? 0} tools`,
        sandboxLine(h.sandbox ?? null),
        context ? `context: ${context.tokens} of ${context.window} tokens` : "",
        `sessions: ${h.sessions}, running turns: ${h.runningTurns ?? 0}`,
      ].filter(Boolean).join("\n");
      return { text: `$(${h.configError ? "warning" : "comment-discussion"}) ${parts.join(" · ")}`, tooltip };
    }
  }
}

/** How commands are confined on this machine (daemon/health's `sandbox`, 1.9). */
export function sandboxLine(sandbox: SandboxHealth | null): string {
  if (!sandbox) return "";
  return sandbox.available
    ? `sandbox: on${sandbox.detail ? ` (${sandbox.detail})` : ""}`
    : `sandbox: none, so commands ask in auto mode${sandbox.detail ? ` (${sandbox.detail})` : ""}`;
}

/** The approval mode's status bar item: the chat's session's mode, or the next chat's. */
export function modeStatus(info: ModeInfo): StatusView {
  const label = info.mode ? MODE_LABELS[info.mode] : "Default";
  const icon = info.mode ? MODE_ICONS[info.mode] : "shield";
  const what = info.mode ? modeDescription(info.mode, info.sandbox) : "The daemon's configured mode ([approvals] mode).";
  const whose = info.pending ? "The next chat starts in this mode" : "This chat's approval mode";
  return { text: `$(${icon}) ${label}`, tooltip: `${whose}: ${label}. ${what}\nClick to change it.` };
}

/** The quick pick of modes, the current one marked. */
export function modePickItems(info: ModeInfo): PickItem<ApprovalMode>[] {
  return MODES.map((mode) => ({
    label: `$(${MODE_ICONS[mode]}) ${MODE_LABELS[mode]}`,
    description: mode === info.mode ? "current" : "",
    detail: modeDescription(mode, info.sandbox),
    value: mode,
  }));
}
