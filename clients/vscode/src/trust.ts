/**
 * The trust questions a daemon asks about a project's own files (its `.mcp.json`, its
 * `.turnstone/policies.toml`): one modal, the safe answer first, closing it decides nothing.
 */
import type { CancelToken } from "./connection";
import type { Host } from "./host";
import type { McpTrustResponse } from "./protocol";

/** What a trust modal shows and the labels of its two answers. */
export interface TrustPrompt {
  message: string;
  detail: string;
  trust: string;
  deny: string;
}

/** The detail's closing lines: what the answer is bound to. */
export function trustFooter(warning: string, hash: string): string[] {
  return ["", warning, `(content hash ${hash.slice(0, 12)}…)`];
}

/** The modal's actions: the first is the dialog's default (Enter), so it is the safe one. */
export function trustActions(prompt: TrustPrompt): string[] {
  return [prompt.deny, prompt.trust];
}

/** The user's choice as the daemon's answer: closing the dialog (Escape) decides nothing for good. */
export function trustDecision(prompt: Pick<TrustPrompt, "trust" | "deny">, choice: string | undefined): McpTrustResponse {
  return { decision: choice === prompt.trust ? "trust" : choice === prompt.deny ? "deny" : "dismiss" };
}

/**
 * Ask with a modal and answer the daemon. A question withdrawn before it is shown is not shown;
 * VS Code cannot close a modal that is open, so one withdrawn meanwhile is answered anyway (the
 * daemon ignores a late answer) and the log says so.
 */
export async function askTrust(host: Host, what: string, prompt: TrustPrompt, token?: CancelToken): Promise<McpTrustResponse> {
  if (token?.isCancellationRequested) {
    host.log(`${what}: the question was withdrawn before it was shown`);
    return { decision: "dismiss" };
  }
  const answer = trustDecision(prompt, await host.modal(prompt.message, prompt.detail, ...trustActions(prompt)));
  host.log(`${what}: ${answer.decision}${token?.isCancellationRequested ? " (withdrawn meanwhile: the daemon ignores it)" : ""}`);
  return answer;
}
