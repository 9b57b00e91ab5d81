/** Tool policies: the trust question about a workspace's policies file, and the policy list. */
import type { TurnstonedClient } from "./client";
import { rpcError, type CancelToken } from "./connection";
import type { Host, PickItem } from "./host";
import type { McpTrustResponse, PolicyFileInfo, PolicyInfo, PolicyListResult, PolicyTrustRequestParams } from "./protocol";
import { askTrust, trustFooter, type TrustPrompt } from "./trust";

const ICON: Record<PolicyInfo["action"], string> = { allow: "$(check)", ask: "$(question)", deny: "$(circle-slash)" };

/** A policy as written in its file: every pattern quoted, so nothing in it hides. */
export function ruleText(policy: PolicyInfo): string {
  const parts = [policy.action, `label = ${JSON.stringify(policy.label ?? "*")}`];
  if (policy.command != null) parts.push(`command = ${JSON.stringify(policy.command)}`);
  if (policy.path != null) parts.push(`path = ${JSON.stringify(policy.path)}`);
  if (policy.priority) parts.push(`priority = ${policy.priority}`);
  return parts.join("  ");
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

/** What the trust modal shows: the file, its content hash and rules, whether it was trusted before. */
export type PolicyTrustQuestion = Pick<PolicyTrustRequestParams, "configPath" | "hash" | "policies" | "previouslyTrusted">;

/** The modal for `policy/requestTrust`: every rule of the file, in its order, exactly as written. */
export function policyTrustPrompt(request: PolicyTrustQuestion): TrustPrompt {
  const allows = request.policies.filter((p) => p.action === "allow").length;
  const message = request.previouslyTrusted
    ? `${request.configPath} changed since you trusted it. Let its ${plural(allows, "allow rule")} run tool calls without asking?`
    : `This project's ${request.configPath} wants ${plural(allows, "allow rule")} to run tool calls without asking. Trust it?`;
  const rules = [...request.policies].sort((a, b) => a.index - b.index).flatMap((p) => {
    const lines = [`#${p.index}  ${ruleText(p)}`];
    if (p.reason) lines.push(`      reason: ${p.reason}`);
    return lines;
  });
  const detail = [
    ...rules,
    "",
    "Its deny and ask rules apply whatever you answer; only its allow rules need your trust. A call rated destructive or touching credentials still asks.",
    ...trustFooter("Trust only a file you have read; any change to it asks again.", request.hash),
  ].join("\n");
  return { message, detail, trust: "Trust", deny: "Deny" };
}

/** Answer `policy/requestTrust` with the modal. */
export function askPolicyTrust(host: Host, request: PolicyTrustQuestion, token?: CancelToken): Promise<McpTrustResponse> {
  return askTrust(host, `policies file ${request.configPath} (${request.hash.slice(0, 12)})`, policyTrustPrompt(request), token);
}

export type PolicyPick =
  | { kind: "open"; path: string }
  | { kind: "trust"; file: PolicyFileInfo }
  | { kind: "untrust"; file: PolicyFileInfo };

function fileState(file: PolicyFileInfo): string {
  if (file.problem) return `cannot be used: ${file.problem}`;
  if (file.decision === "trusted") return "trusted: its allow rules apply";
  if (file.decision === "denied") return "denied: its allow rules are off";
  return "not trusted yet: its allow rules are off";
}

/** The workspace file's state (and what can be done about it), then every policy in the order tried. */
export function policyPickItems(listing: PolicyListResult): PickItem<PolicyPick>[] {
  const rows: PickItem<PolicyPick>[] = [];
  const file = listing.workspaceFile;
  if (file) {
    rows.push({ label: `$(shield) Workspace policies file: ${fileState(file)}`, description: file.path, value: { kind: "open", path: file.path } });
    if (!file.problem && file.decision !== "trusted") rows.push({ label: "$(unlock) Trust the workspace policies file…", description: "shows its rules first", value: { kind: "trust", file } });
    if (file.decision === "trusted") rows.push({ label: "$(lock) Stop trusting the workspace policies file", description: "its allow rules stop applying", value: { kind: "untrust", file } });
  }
  for (const p of listing.policies) {
    const row: PickItem<PolicyPick> = {
      label: `${ICON[p.action]} ${ruleText(p)}`,
      description: `${p.source === "config" ? "config.toml" : "workspace"} #${p.index}${p.active === false ? " · not applied" : ""}`,
      value: { kind: "open", path: p.origin },
    };
    const detail = [p.note, p.reason].filter(Boolean).join(" · ");
    if (detail) row.detail = detail;
    rows.push(row);
  }
  return rows;
}

/** Trust (after the modal showed its rules) or stop trusting the workspace's file. */
async function decideFile(host: Host, client: TurnstonedClient, listing: PolicyListResult, pick: Extract<PolicyPick, { kind: "trust" | "untrust" }>): Promise<void> {
  const { file } = pick;
  let trusted = false;
  if (pick.kind === "trust") {
    const policies = listing.policies.filter((p) => p.source === "workspace");
    const answer = await askPolicyTrust(host, { configPath: file.path, hash: file.hash, policies });
    if (answer.decision === "dismiss") return;
    trusted = answer.decision === "trust";
  }
  try {
    // The hash binds a trust to the content shown; stopping trusting forgets every version.
    const result = await client.policyTrust({ configPath: file.path, trusted, hash: pick.kind === "trust" ? file.hash : null });
    void host.info(`${result.configPath}: ${result.trusted ? "trusted, its allow rules apply" : "not trusted, its allow rules are off"}.`);
  } catch (err) {
    void host.warn(`policy/trust: ${rpcError(err).message}`);
  }
}

/** The Tool Policies command: what applies to a session and why; trust or open the files. */
export async function managePolicies(host: Host, client: TurnstonedClient, sessionId: string): Promise<void> {
  for (;;) {
    const listing = await client.policies(sessionId);
    if (!listing.policies.length && !listing.workspaceFile) {
      void host.info("No tool policies apply: add [[policies]] to config.toml or to the workspace's .turnstone/policies.toml.");
      return;
    }
    const pick = await host.pick(policyPickItems(listing), { title: "Tool policies of this chat (in the order tried)", placeHolder: "Pick a policy to open its file" });
    if (!pick) return;
    if (pick.kind === "open") {
      await host.openFile(pick.path);
      return;
    }
    await decideFile(host, client, listing, pick);
  }
}
