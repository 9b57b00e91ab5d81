/** Tool policies and grants: the trust modal of a workspace's policies file, the list rows. */
import { describe, expect, it } from "vitest";
import type { CancelToken } from "../../src/connection";
import { grantActions, grantPickItems } from "../../src/grants";
import { policyPickItems, policyTrustPrompt, ruleText } from "../../src/policies";
import type { PolicyInfo } from "../../src/protocol";
import { askTrust, trustActions, trustDecision } from "../../src/trust";
import { FakeHost } from "../support/fakeHost";

const FILE = "/src/app/.turnstone/policies.toml";
const rule = (over: Partial<PolicyInfo>): PolicyInfo => ({ action: "allow", label: "bash", source: "workspace", origin: FILE, index: 1, ...over });
const RULES: PolicyInfo[] = [
  rule({ action: "deny", command: "git push*", priority: 10, reason: "pushes go through review", index: 2 }),
  rule({ command: "npm test*", index: 1, active: false, note: "not trusted: a workspace file may deny or ask" }),
  rule({ action: "ask", label: "*", path: "secrets/**\n", index: 3 }),
];

describe("the trust modal of a workspace's policies file", () => {
  it("shows every rule in the file's order, exactly as written, and says which need trust", () => {
    const prompt = policyTrustPrompt({ configPath: FILE, hash: "9f86d081884c7d659a2f", policies: RULES });
    expect(prompt.message).toBe(`This project's ${FILE} wants 1 allow rule to run tool calls without asking. Trust it?`);
    expect(prompt.detail.split("\n").slice(0, 5)).toEqual([
      '#1  allow  label = "bash"  command = "npm test*"',
      '#2  deny  label = "bash"  command = "git push*"  priority = 10',
      "      reason: pushes go through review",
      // A pattern is quoted: a line break in it cannot pass for the end of the rule.
      '#3  ask  label = "*"  path = "secrets/**\\n"',
      "",
    ]);
    expect(prompt.detail).toContain("Its deny and ask rules apply whatever you answer; only its allow rules need your trust.");
    expect(prompt.detail).toContain("(content hash 9f86d081884c…)");
    expect(trustActions(prompt)).toEqual(["Deny", "Trust"]);
    expect([trustDecision(prompt, "Trust"), trustDecision(prompt, "Deny"), trustDecision(prompt, undefined)].map((d) => d.decision)).toEqual(["trust", "deny", "dismiss"]);
    const changed = policyTrustPrompt({ configPath: FILE, hash: "h", policies: [rule({}), rule({ index: 2 })], previouslyTrusted: true });
    expect(changed.message).toBe(`${FILE} changed since you trusted it. Let its 2 allow rules run tool calls without asking?`);
  });

  it("a question withdrawn before it is shown is not shown; one withdrawn while open is logged", async () => {
    const host = new FakeHost({ command: "", args: [], model: "", baseUrl: "", logLevel: "INFO", skipPermissions: false, approvalMode: null, editorContext: true, shareDaemon: false }, { name: "w", path: "/w" });
    const prompt = policyTrustPrompt({ configPath: FILE, hash: "abc", policies: RULES });
    const withdrawn: CancelToken = { isCancellationRequested: true, onCancellationRequested: () => undefined };
    expect(await askTrust(host, "policies", prompt, withdrawn)).toEqual({ decision: "dismiss" });
    expect(host.shown).toEqual([]);
    const open = { isCancellationRequested: false, onCancellationRequested: () => undefined };
    host.respond = () => { open.isCancellationRequested = true; return "Trust"; };
    expect(await askTrust(host, "policies", prompt, open)).toEqual({ decision: "trust" });
    expect(host.shown.map((s) => [s.kind, s.actions])).toEqual([["modal", ["Deny", "Trust"]]]);
    expect(host.logs.at(-1)).toBe("policies: trust (withdrawn meanwhile: the daemon ignores it)");
  });
});

describe("the policy list", () => {
  it("the workspace file's state and the action it allows, then each rule with its source", () => {
    const file = { path: FILE, hash: "h" };
    const rows = policyPickItems({ policies: [rule({ action: "deny", label: "web_fetch", source: "config", origin: "/home/me/.config/turnstoned/config.toml" }), RULES[1]!], workspaceFile: file });
    expect(rows.map((r) => [r.label, r.description, r.detail])).toEqual([
      ["$(shield) Workspace policies file: not trusted yet: its allow rules are off", FILE, undefined],
      ["$(unlock) Trust the workspace policies file…", "shows its rules first", undefined],
      ['$(circle-slash) deny  label = "web_fetch"', "config.toml #1", undefined],
      ['$(check) allow  label = "bash"  command = "npm test*"', "workspace #1 · not applied", "not trusted: a workspace file may deny or ask"],
    ]);
    expect(rows[1]!.value).toEqual({ kind: "trust", file });
    expect(rows[2]!.value).toEqual({ kind: "open", path: "/home/me/.config/turnstoned/config.toml" });
    const trusted = policyPickItems({ policies: [], workspaceFile: { ...file, decision: "trusted" } });
    expect(trusted.map((r) => r.value.kind)).toEqual(["open", "untrust"]);
    const broken = policyPickItems({ policies: [], workspaceFile: { ...file, problem: "line 3: expected '='" } });
    expect(broken.map((r) => r.label)).toEqual(["$(shield) Workspace policies file: cannot be used: line 3: expected '='"]);
    expect(ruleText(rule({ label: undefined, command: undefined }))).toBe('allow  label = "*"');
  });
});

describe("the grant list", () => {
  it("each rule, where it comes from and what it lets run; only a chat's own can be revoked", () => {
    const rows = grantPickItems([
      { rule: "bash:npm test", description: "bash commands starting with `npm test`", source: "session", revocable: true },
      { rule: "web_fetch", description: "calls labelled web_fetch", source: "config", revocable: false },
    ]);
    expect(rows.map((r) => [r.label, r.description, r.detail])).toEqual([
      ["$(key) bash:npm test", "saved by “Always allow” in this chat", "bash commands starting with `npm test`"],
      ["$(gear) web_fetch", "config.toml [tools] auto_approve_tools", "calls labelled web_fetch"],
    ]);
    expect(grantActions(rows[0]!.value).map((a) => [a.label, a.value])).toEqual([["$(trash) Revoke bash:npm test", "revoke"]]);
  });
});
