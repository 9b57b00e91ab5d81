/**
 * Logging in to an OAuth-protected MCP server (protocol 1.14) against the real daemon and the
 * repository's OAuth server (tests/mcp_servers/oauth_server.py: an MCP endpoint and its own
 * authorization server on loopback). The browser is `fetch`, following the authorization
 * server's redirect to the daemon's loopback address as a browser does.
 */
import { spawn, type ChildProcess } from "node:child_process";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { appTests, launch, settings, withModel } from "../support/app";
import { PYTHON, REPO, writeConfig } from "../support/daemon";
import { FakeHost } from "../support/fakeHost";
import type { McpServerInfo } from "../../src/protocol";

const t = appTests();

/** The OAuth server on a port it picks; stopped after the test. */
async function oauthServer(): Promise<number> {
  const child: ChildProcess = spawn(PYTHON, [path.join(REPO, "tests/mcp_servers/oauth_server.py")], { stdio: ["ignore", "pipe", "pipe"] });
  t.cleanups.push(() => child.kill("SIGTERM"));
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const port = /^PORT (\d+)/m.exec(out);
      if (port) resolve(Number(port[1]));
    });
    let err = "";
    child.stderr!.on("data", (chunk: Buffer) => (err += chunk.toString()));
    child.on("exit", (code) => reject(new Error(`the OAuth server exited (${code}): ${out}${err}`)));
  });
}

/** The extension with the protected server configured, ready. */
async function ready(): Promise<FakeHost> {
  const port = await oauthServer();
  writeConfig(t.home, ["[tools]", 'search = "off"', "[mcp.servers.o]", `url = "http://127.0.0.1:${port}/mcp"`, ""].join("\n"));
  const model = await withModel(t, [{ text: "Hi." }]);
  const host = new FakeHost(settings({ baseUrl: model.baseUrl }), { name: "work", path: t.work });
  launch(t, host);
  await host.until("the daemon to be ready", () => host.status.text.includes("scripted"));
  return host;
}

async function server(host: FakeHost, name: string): Promise<McpServerInfo | undefined> {
  const { servers } = (await host.daemons[0]!.raw.sendRequest("mcpServer/list", null)) as { servers: McpServerInfo[] };
  return servers.find((s) => s.name === name);
}

describe("MCP login against the real daemon and an OAuth server", () => {
  it("a server that needs a login says so once; Log In opens the page, and its tools connect; Log Out forgets the tokens", async () => {
    const host = await ready();
    // The browser follows the login page to the daemon's redirect; the user said yes at once.
    host.openExternal = async (url: string) => {
      host.opened.push(url);
      void fetch(url).then((r) => r.text()).catch(() => undefined);
      return true;
    };
    host.respond = (shown) => (shown.message === "MCP server o needs you to log in." ? "Log In" : undefined);
    await host.until("the needs-login notification", () => host.shown.some((s) => s.message === "MCP server o needs you to log in."), 20000);
    expect(host.shown.find((s) => s.message === "MCP server o needs you to log in.")).toMatchObject({ kind: "warn", actions: ["Log In"] });

    await host.until("the login to end", () => host.shown.some((s) => s.message.startsWith("Logged in to o")), 30000);
    expect(host.shown.find((s) => s.message.startsWith("Logged in to o"))!.message).toBe("Logged in to o (1 tool, 0 resources, 0 prompts).");
    expect(host.opened).toHaveLength(1);
    expect(host.opened[0]).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/authorize\?/);
    expect(host.shown.some((s) => s.message.startsWith("Log in to MCP server o in your browser.") && s.actions.includes("Copy Link"))).toBe(true);
    expect(host.progress.map((p) => [p.title, p.cancellable, p.done])).toEqual([["Logging in to MCP server o: finish in your browser", true, true]]);
    expect(await server(host, "o")).toMatchObject({ status: "connected", tools: 1, loggedIn: true, needsAuth: false });
    // Told once: connecting again (after the login) does not tell it again.
    expect(host.shown.filter((s) => s.message === "MCP server o needs you to log in.")).toHaveLength(1);
    expect(host.logs.some((l) => l.includes("/authorize?"))).toBe(false);

    await host.commands.get("turnstoned.mcpLogout")!("o");
    await host.until("the logout", () => host.shown.some((s) => s.message === "Logged out of o: its tokens are forgotten."));
    // Without its tokens the server asks for a login again, and the user is told (with Log In).
    host.respond = () => undefined;
    await host.until("the new need to be told", () => host.shown.filter((s) => s.message === "MCP server o needs you to log in.").length === 2, 20000);
    expect(await server(host, "o")).toMatchObject({ loggedIn: false, needsAuth: true });
  }, 90000);

  it("no browser: the address is shown to copy; Cancel on the progress ends the login", async () => {
    const host = await ready();
    host.browserOpens = false;
    host.respond = (shown) => (shown.message.startsWith("Open this address to log in to MCP server o") ? "Copy Link" : undefined);
    const login = host.commands.get("turnstoned.mcpLogin")!("o") as Promise<void>;
    await host.until("the address to copy", () => host.copied.length > 0, 20000);
    const shown = host.shown.find((s) => s.message.startsWith("Open this address to log in to MCP server o"))!;
    expect(shown).toMatchObject({ kind: "warn", actions: ["Copy Link"] });
    expect(host.copied).toEqual([host.opened[0]]);
    expect(shown.message.endsWith(`: ${host.opened[0]}`)).toBe(true);
    // Asked again while it waits: it says so rather than starting a second login.
    await host.commands.get("turnstoned.mcpLogin")!("o");
    await host.until("the second ask", () => host.shown.some((s) => s.message.startsWith("The login to o waits")));
    expect(host.shown.some((s) => s.message === "The login to o waits for your browser: cancel it from its notification.")).toBe(true);
    expect(host.progress).toHaveLength(1);

    host.progress[0]!.cancel();
    await login;
    expect(host.shown.some((s) => s.message === "The login to o was cancelled.")).toBe(true);
    expect(await server(host, "o")).toMatchObject({ needsAuth: true, loggedIn: false });
  }, 90000);
});
