import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import manifest from "../../package.json";
import { attachment, composePrompt } from "../../src/messages/attachments";
import { errorHint } from "../../src/chat/hints";
import { chatHtml, contentSecurityPolicy, makeNonce } from "../../src/messages/html";
import { daemonLaunch, daemonStopped, missingDaemon, resolveCommand, sharedMismatch, sharesDaemon, StderrTail } from "../../src/launch";
import { describeChanges, loginCandidates, mcpPickItems, mcpSummary, trustPrompt } from "../../src/mcp";
import { trustActions, trustDecision } from "../../src/trust";
import { parseProposalUri, proposalUri } from "../../src/review";
import { ago, sessionNodes } from "../../src/sessions";
import { readSettings } from "../../src/settings";
import { statusView } from "../../src/status";
import type { DaemonHealthResult } from "../../src/protocol";

describe("settings", () => {
  it("reads typed values and falls back to package.json's defaults on wrong types", () => {
    const values: Record<string, unknown> = { command: " /opt/t/bin/turnstoned ", args: ["--x", 3], model: "qwen", logLevel: "LOUD", skipPermissions: "yes" };
    expect(readSettings((k) => values[k])).toEqual({ command: "/opt/t/bin/turnstoned", args: ["--x"], model: "qwen", baseUrl: "", logLevel: "INFO", skipPermissions: false, approvalMode: null, editorContext: true, shareDaemon: true });
    expect(readSettings((k) => ({ approvalMode: "plan" } as Record<string, unknown>)[k]).approvalMode).toBe("plan");
    expect(readSettings((k) => ({ approvalMode: "default" } as Record<string, unknown>)[k]).approvalMode).toBeNull();
    const props = manifest.contributes.configuration.properties;
    // Empty: the extension finds the daemon (or offers to install it).
    expect(props["turnstoned.command"].default).toBe("");
    expect(readSettings(() => undefined).command).toBe("");
  });

  it("lets no workspace choose what runs, where the key goes, whether approvals are skipped or what runs unasked", () => {
    // A cloned repository's .vscode/settings.json must not set these (VS Code applies
    // machine-scoped settings from user and remote settings only); untrusted windows restrict them too.
    const props = manifest.contributes.configuration.properties as Record<string, { scope?: string }>;
    const guarded = ["turnstoned.command", "turnstoned.args", "turnstoned.shareDaemon", "turnstoned.baseUrl", "turnstoned.skipPermissions", "turnstoned.approvalMode"];
    expect(guarded.map((k) => props[k]?.scope)).toEqual(guarded.map(() => "machine"));
    expect(manifest.capabilities.untrustedWorkspaces.restrictedConfigurations).toEqual(guarded);
  });

  it("declares no setting for the API key", () => {
    expect(Object.keys(manifest.contributes.configuration.properties).filter((k) => /key|secret|token/i.test(k))).toEqual([]);
  });
});

describe("launch", () => {
  const settings = readSettings((k) => ({ model: "m1", baseUrl: "http://127.0.0.1:8080/v1", logLevel: "DEBUG", args: ["--tool-search", "on"] } as Record<string, unknown>)[k]);

  it("puts the key, model and URL in the environment, not on the command line", () => {
    const launch = daemonLaunch(settings, "sk-secret", { PATH: "/usr/bin", OPENAI_API_KEY: "old" });
    expect(launch.env).toMatchObject({ PATH: "/usr/bin", OPENAI_API_KEY: "sk-secret", TURNSTONED_MODEL: "m1", OPENAI_BASE_URL: "http://127.0.0.1:8080/v1", TURNSTONED_LOG: "DEBUG" });
    expect([launch.command, ...launch.args].join(" ")).not.toContain("sk-secret");
    expect(launch.args).toEqual(["--tool-search", "on"]);
    expect(daemonLaunch(readSettings(() => undefined), undefined, {}).env).toEqual({ TURNSTONED_LOG: "INFO" });
  });

  it("shares the resident daemon only for turnstoned itself without arguments", () => {
    const bare = readSettings(() => undefined);
    expect(bare.shareDaemon).toBe(true);
    expect(sharesDaemon(bare, { command: "/usr/bin/turnstoned", via: "path" })).toBe(true);
    expect(sharesDaemon(bare, { command: "/usr/bin/python3", via: "python" })).toBe(true);
    expect(sharesDaemon(bare, { command: "/opt/t/bin/turnstoned", via: "setting" })).toBe(true);
    expect(sharesDaemon(bare, { command: "/home/u/bin/wrapper.sh", via: "setting" })).toBe(false);
    expect(sharesDaemon(settings, { command: "/usr/bin/turnstoned", via: "path" })).toBe(false);
    expect(sharesDaemon({ ...bare, shareDaemon: false }, { command: "/usr/bin/turnstoned", via: "path" })).toBe(false);
  });

  it("says when the shared daemon runs with another model or server than these settings", () => {
    const health = { resident: true, model: "qwen", modelUrl: "http://127.0.0.1:8080/v1" } as DaemonHealthResult;
    expect(sharedMismatch(health, {})).toBeNull();
    expect(sharedMismatch(health, { TURNSTONED_MODEL: "qwen", OPENAI_BASE_URL: "http://127.0.0.1:8080/v1/" })).toBeNull();
    expect(sharedMismatch({ ...health, resident: false }, { TURNSTONED_MODEL: "other" })).toBeNull();
    expect(sharedMismatch(health, { OPENAI_BASE_URL: "http://127.0.0.1:11434/v1" })).toBe(
      "The shared turnstoned daemon uses qwen at http://127.0.0.1:8080/v1, but your settings say qwen at http://127.0.0.1:11434/v1 (it was started with other settings).");
    expect(sharedMismatch({ ...health, modelUrl: null }, { TURNSTONED_MODEL: "gpt-x" })).toBe(
      "The shared turnstoned daemon uses qwen at OpenAI, but your settings say gpt-x at OpenAI (it was started with other settings).");
  });

  it("finds the daemon on PATH or by path, and says how to install it when missing", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "launch-"));
    const exe = path.join(dir, "turnstoned");
    fs.writeFileSync(exe, "#!/bin/sh\n", { mode: 0o755 });
    fs.writeFileSync(path.join(dir, "plain"), "x", { mode: 0o644 });
    expect(resolveCommand("turnstoned", { PATH: `/nonexistent:${dir}` })).toBe(exe);
    expect(resolveCommand(exe, {})).toBe(exe);
    expect(resolveCommand("plain", { PATH: dir })).toBeUndefined();
    expect(resolveCommand("turnstoned", { PATH: "/nonexistent" })).toBeUndefined();
    expect(missingDaemon("turnstoned").detail).toContain("turnstoned.command");
  });

  it("keeps the stderr tail and explains an exit with it", () => {
    const tail = new StderrTail(3);
    tail.push("one\ntwo\nthr");
    tail.push("ee\nfour\nModuleNotFoundError: No module named 'msgspec'");
    expect(tail.text()).toBe("three\nfour\nModuleNotFoundError: No module named 'msgspec'");
    const problem = daemonStopped("turnstoned", { code: 1 }, tail.text());
    expect(problem.message).toContain("exited with code 1");
    expect(problem.detail).toContain("reinstall");
    expect(problem.detail).toContain("No module named 'msgspec'");
    expect(daemonStopped("t", { signal: "SIGKILL" }, "").message).toContain("killed by SIGKILL");
  });
});

describe("attachments", () => {
  it("labels a selection with its path and line range and fences it safely", () => {
    const a = attachment({ path: "src/a.ts", languageId: "typescript", text: "const x = 1;\n```\n", lines: { start: 3, end: 4 } });
    expect(a.label).toBe("src/a.ts:3-4");
    expect(a.text).toBe("Lines 3-4 of `src/a.ts`:\n````typescript\nconst x = 1;\n```\n````");
    expect(attachment({ path: "b.py", languageId: "python", text: "x" }).label).toBe("b.py");
    expect(composePrompt([a], "  explain  ")).toBe(`${a.text}\n\nexplain`);
    expect(composePrompt([], "   ")).toBe("");
  });
});

describe("chat page", () => {
  it("allows only its nonce'd script and the extension's resources", () => {
    const csp = contentSecurityPolicy("https://x.vscode-cdn.net", "N0NCE");
    expect(csp).toBe("default-src 'none'; img-src https://x.vscode-cdn.net data:; style-src https://x.vscode-cdn.net; font-src https://x.vscode-cdn.net; script-src 'nonce-N0NCE'");
    const html = chatHtml({ cspSource: "https://x", scriptUri: "https://x/w.js", styleUri: "https://x/c.css", nonce: "N0NCE" });
    expect(html.match(/<script/g)?.length).toBe(1);
    expect(html).toContain('<script nonce="N0NCE" src="https://x/w.js">');
    expect(html).not.toMatch(/unsafe-(inline|eval)/);
    expect(makeNonce()).toMatch(/^[A-Za-z0-9]{32}$/);
  });

  it("has a hint for every turn error kind", () => {
    for (const kind of ["notConfigured", "unauthorized", "rateLimited", "contextWindowExceeded", "badRequest", "upstreamUnavailable", "turnLimit", "internal"]) {
      expect(errorHint(kind)).not.toContain("output channel for details");
    }
    expect(errorHint("somethingNew")).toContain("output channel");
  });
});

describe("sessions tree", () => {
  it("rows: title, folder, age, status; the current session marked", () => {
    const now = new Date("2026-12-03T12:00:00Z");
    const nodes = sessionNodes([
      { sessionId: "a", title: "fix tests", cwd: "/src/app", kind: "interactive", createdAt: "2026-12-03T10:00:00Z", updatedAt: "2026-12-03T11:55:00Z", status: "idle" },
      { sessionId: "b", title: null, cwd: "/src/lib", kind: "interactive", createdAt: "2026-12-01T10:00:00Z", updatedAt: "2026-12-01T10:00:00Z", status: "closed" },
    ], "a", now);
    expect(nodes.map((n) => [n.label, n.description, n.contextValue, n.command?.arg])).toEqual([
      ["● fix tests", "app · 5 min ago", "session.open", "a"],
      ["(untitled)", "lib · 2026-12-01 · closed", "session.closed", "b"],
    ]);
    expect(ago("2026-12-03T11:59:30Z", now)).toBe("just now");
    expect(ago("2026-12-03T09:00:00Z", now)).toBe("3 h ago");
  });
});

describe("MCP", () => {
  it("quick pick rows show status, counts and the error; refresh summaries", () => {
    const rows = mcpPickItems([
      { name: "fs", status: "connected", tools: 14, resources: 1, prompts: 0, origin: "config.toml" },
      { name: "gh", status: "failed", error: "spawn npx ENOENT" },
    ]);
    expect(rows.map((r) => [r.label, r.description, r.detail])).toEqual([
      ["$(pass-filled) fs", "connected · 14 tools, 1 resource, 0 prompts", "from config.toml"],
      ["$(error) gh", "failed · 0 tools, 0 resources, 0 prompts", "error: spawn npx ENOENT"],
      ["$(refresh) Refresh all servers", "rediscover tools, reconnect failed servers", undefined],
    ]);
    expect(describeChanges([{ server: "fs", added: ["a", "b"], removed: ["c"] }, { server: "gh", error: "down" }, { server: "x" }])).toBe("fs: +2 (a, b), −1 (c); gh: down; x: unchanged");
    expect(mcpSummary({ servers: 3, connected: 2 })).toBe("MCP 2/3");
    expect(mcpSummary({})).toBe("");
  });

  it("a server that needs a login: its row says so and picking it logs in; login and logout offer the right servers", () => {
    const servers = [
      { name: "docs", status: "connected" as const, tools: 2, loggedIn: true, needsAuth: false },
      { name: "off", status: "disabled" as const },
      { name: "linear", status: "failed" as const, needsAuth: true, loggedIn: false, error: "asks for a login" },
      { name: "repo", status: "untrusted" as const, needsAuth: true },
    ];
    const rows = mcpPickItems(servers);
    expect(rows.slice(0, 3).map((r) => [r.label, r.description, r.value])).toEqual([
      ["$(pass-filled) docs", "connected · logged in · 2 tools, 0 resources, 0 prompts", { kind: "server", name: "docs" }],
      ["$(circle-slash) off", "disabled · 0 tools, 0 resources, 0 prompts", { kind: "server", name: "off" }],
      ["$(key) linear", "failed · needs login · 0 tools, 0 resources, 0 prompts", { kind: "login", name: "linear" }],
    ]);
    expect(loginCandidates(servers, "login").map((s) => s.name)).toEqual(["linear", "docs"]);
    expect(loginCandidates(servers, "logout").map((s) => s.name)).toEqual(["docs"]);
  });
});

describe("MCP project-config trust", () => {
  it("shows every command, URL and variable exactly as written", () => {
    const prompt = trustPrompt({
      workspace: "/src/app", configPath: "/src/app/.mcp.json", hash: "3b1f00aa11bb22cc33dd",
      servers: [
        { name: "db", transport: "stdio", command: "npx", args: ["-y", "db-mcp", "--token", "${DB_TOKEN}", "it's"], cwd: "/src/app", env: ["DB_URL"], variables: ["DATABASE_URL", "DB_TOKEN"] },
        { name: "web", transport: "http", url: "https://mcp.example/${TENANT}", variables: ["TENANT"], problem: "unsupported header" },
      ],
    });
    expect(prompt.message).toBe("This project's /src/app/.mcp.json wants to start 2 MCP servers. Trust it?");
    expect(prompt.detail).toContain("runs: npx -y db-mcp --token '${DB_TOKEN}' 'it'\\''s'");
    expect(prompt.detail).toContain("receives the values of your environment variables: DATABASE_URL, DB_TOKEN");
    expect(prompt.detail).toContain("sets in its environment: DB_URL");
    expect(prompt.detail).toContain("connects to: https://mcp.example/${TENANT}");
    expect(prompt.detail).toContain("will not run: unsupported header");
    expect(trustActions(prompt)).toEqual(["Don't Trust", "Trust and Start"]);
    expect(trustPrompt({ workspace: "/w", configPath: "/w/.mcp.json", hash: "h", servers: [{ name: "a" }], previouslyTrusted: true }).message)
      .toBe("/w/.mcp.json changed since you trusted it. Start its MCP server?");
  });

  it("closing the dialog decides nothing for good", () => {
    const prompt = trustPrompt({ workspace: "/w", configPath: "/w/.mcp.json", hash: "h", servers: [] });
    expect([trustDecision(prompt, "Trust and Start"), trustDecision(prompt, "Don't Trust"), trustDecision(prompt, undefined)].map((d) => d.decision)).toEqual(["trust", "deny", "dismiss"]);
  });
});

describe("status bar", () => {
  it("shows state, model, MCP and context fill", () => {
    const health = { version: "0.1", protocolVersion: 1, sessions: 2, model: "qwen", mcp: { servers: 2, connected: 1, tools: 9 } };
    expect(statusView({ state: "ready", health }, { tokens: 2500, window: 10000 }).text).toBe("$(comment-discussion) qwen · MCP 1/2 · ctx 25%");
    expect(statusView({ state: "starting" }).text).toContain("sync~spin");
    const stopped = statusView({ state: "stopped", problem: { message: "gone", detail: "why" } });
    expect([stopped.text, stopped.tooltip.includes("why")]).toEqual(["$(error) turnstoned", true]);
  });
});

describe("proposal URIs", () => {
  it("round-trip a path with spaces and odd characters; the proposed side has its own (editable) scheme", () => {
    const ref = { sessionId: "s 1", callId: "c#2", path: "/work/my dir/a?b.ts", side: "new" as const };
    const uri = proposalUri(ref);
    expect(uri.startsWith("turnstoned-proposed:/work/my%20dir/a%3Fb.ts?")).toBe(true);
    expect(parseProposalUri(uri)).toEqual(ref);
    const old = proposalUri({ ...ref, side: "old" });
    expect(old.startsWith("turnstoned-proposal:/work/my%20dir/a%3Fb.ts?")).toBe(true);
    expect(parseProposalUri(old)).toEqual({ ...ref, side: "old" });
    expect(parseProposalUri("file:///x")).toBeNull();
    expect(parseProposalUri("turnstoned-proposal:/x?session=a&call=b&side=sideways")).toBeNull();
  });
});
