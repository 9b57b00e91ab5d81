/**
 * The resident daemon, shared by default: a bare turnstoned command reaches it through
 * `turnstoned attach` (two windows, one daemon), a daemon running with other settings is said
 * with the fix offered, and a daemon that does not take `attach` is started on its own. Each
 * test has its own TURNSTONED_HOME, so its resident daemon is its own; `turnstoned stop` ends it.
 */
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { RESTART_SHARED } from "../../src/daemon";
import type { DaemonHealthResult } from "../../src/protocol";
import { appTests, DAEMON, last, launch, pageState, sawEvent, settings, withModel } from "../support/app";
import { FakeHost } from "../support/fakeHost";

const t = appTests();

/** `turnstoned stop` for this test's home, after the test: the resident daemon outlives its clients. */
function stopResidentAfter(): void {
  const home = t.home;
  t.cleanups.unshift(() => {
    execFileSync(DAEMON, ["stop"], { env: { ...process.env, TURNSTONED_HOME: home }, stdio: "ignore", timeout: 20000 });
  });
}

async function health(host: FakeHost, index = -1): Promise<DaemonHealthResult> {
  return (await host.daemons.at(index)!.raw.sendRequest("daemon/health", {})) as DaemonHealthResult;
}

describe("the shared resident daemon", () => {
  it("two windows with a bare command share one daemon through attach", async () => {
    stopResidentAfter();
    const model = await withModel(t, [{ text: "Hi." }]);
    const hosts = [0, 1].map(() => new FakeHost(settings({ baseUrl: model.baseUrl, shareDaemon: true }), { name: "work", path: t.work }));
    for (const host of hosts) {
      launch(t, host);
      await host.until("the daemon to be ready", () => host.status.text.includes("scripted"), 30000);
    }
    for (const host of hosts) {
      expect(host.launches.at(-1)!.args).toEqual(["attach"]);
      expect((await health(host)).resident).toBe(true);
      expect(host.status.tooltip).toContain("the resident daemon this user's clients share");
      expect(host.logs.some((l) => l.endsWith(", shared"))).toBe(true);
    }
    // One daemon: a session the first window starts is listed by the second.
    const { sessionId } = (await hosts[0]!.daemons[0]!.raw.sendRequest("session/start", { cwd: t.work, workspace: t.work })) as { sessionId: string };
    const listed = (await hosts[1]!.daemons[0]!.raw.sendRequest("session/list", {})) as { sessions: { sessionId: string }[] };
    expect(listed.sessions.map((s) => s.sessionId)).toContain(sessionId);
    // No mismatch to tell: the same settings.
    expect(hosts.flatMap((h) => h.shown).filter((s) => s.message.startsWith("The shared turnstoned daemon"))).toEqual([]);
  }, 90000);

  it("a shared daemon on another model server: said with the fix, which restarts it with these settings", async () => {
    stopResidentAfter();
    const first = await withModel(t, [{ text: "Hi." }]);
    const second = await withModel(t, [{ text: "Hi." }]);
    const earlier = new FakeHost(settings({ baseUrl: first.baseUrl, shareDaemon: true }), { name: "work", path: t.work });
    const app = launch(t, earlier);
    await earlier.until("the first window's daemon", () => earlier.status.text.includes("scripted"), 30000);
    await app.dispose();

    const host = new FakeHost(settings({ baseUrl: second.baseUrl, shareDaemon: true }), { name: "work", path: t.work });
    host.respond = (shown) => (shown.message.startsWith("The shared turnstoned daemon") ? RESTART_SHARED : undefined);
    launch(t, host);
    await host.until("the mismatch", () => host.shown.some((s) => s.message.startsWith("The shared turnstoned daemon")), 30000);
    const said = host.shown.find((s) => s.message.startsWith("The shared turnstoned daemon"))!;
    expect(said).toMatchObject({ kind: "warn", actions: [RESTART_SHARED, "Open Settings"] });
    expect(said.message).toBe(`The shared turnstoned daemon uses scripted at ${first.baseUrl}, but your settings say scripted at ${second.baseUrl} (it was started with other settings).`);
    await host.until("the restarted daemon", () => host.daemons.length === 2 && host.status.text.includes("scripted"), 30000);
    const now = await health(host);
    expect([now.resident, now.modelUrl]).toEqual([true, second.baseUrl]);
    expect(host.launches.map((l) => l.args)).toEqual([["attach"], ["attach"]]);
    expect(host.shown.filter((s) => s.message.startsWith("The shared turnstoned daemon"))).toHaveLength(1);
  }, 90000);

  it("a daemon that does not take attach starts on its own, without an error", async () => {
    const model = await withModel(t, [{ text: "Hi." }]);
    // An older turnstoned: `attach` is an unknown command (argparse's exit 2); else the real one.
    const bin = path.join(t.dir, "bin");
    fs.mkdirSync(bin);
    const old = path.join(bin, "turnstoned");
    fs.writeFileSync(old, `#!/bin/sh\nif [ "$1" = attach ]; then echo "turnstoned: error: invalid choice: 'attach'" >&2; exit 2; fi\nexec ${JSON.stringify(DAEMON)} "$@"\n`, { mode: 0o755 });
    const host = new FakeHost(settings({ command: old, baseUrl: model.baseUrl, shareDaemon: true }), { name: "work", path: t.work });
    launch(t, host);
    await host.until("the daemon to be ready", () => host.status.text.includes("scripted"), 30000);
    expect(host.launches.map((l) => l.args)).toEqual([["attach"], []]);
    expect((await health(host)).resident).toBe(false);
    expect(host.logs.some((l) => l.startsWith("the shared daemon did not answer"))).toBe(true);
    expect(host.shown.filter((s) => s.kind === "error")).toEqual([]);
  }, 60000);

  it("a window that resumes a session mid-turn sees its prompt and the answer so far; another window's prompt shows as the user's", async () => {
    stopResidentAfter();
    const model = await withModel(t, [{ hang: 3, text: "The first half, " }, { text: "Second answer." }]);
    const [sender, joiner] = [0, 1].map(() => new FakeHost(settings({ baseUrl: model.baseUrl, shareDaemon: true }), { name: "work", path: t.work }));
    for (const host of [sender!, joiner!]) {
      launch(t, host);
      await host.until("the daemon to be ready", () => host.status.text.includes("scripted"), 30000);
      host.fromPage({ type: "ready" });
    }
    sender!.fromPage({ type: "send", text: "Tell me in two halves" });
    await sender!.until("the first half", () => pageState(sender!.posted).entries.some((e) => e.kind === "agent" && e.text === "The first half, "));
    const sessionId = last(sender!, "session")!.sessionId!;

    await joiner!.commands.get("turnstoned.sessions.resume")!(sessionId);
    // Right after the resume, before the turn ends: what it missed, replayed.
    const joined = pageState(joiner!.posted);
    expect(joined.sessionId).toBe(sessionId);
    expect(joined.turnId).not.toBeNull();
    expect(joined.entries.map((e) => [e.kind, "text" in e ? e.text : ""])).toEqual([["user", "Tell me in two halves"], ["agent", "The first half, "]]);
    expect(sawEvent(joiner!, "turn/completed")).toBe(false);
    await joiner!.until("the turn to end", () => sawEvent(joiner!, "turn/completed"), 20000);
    expect(pageState(joiner!.posted).entries.filter((e) => e.kind === "agent").map((e) => (e.kind === "agent" ? e.text : ""))).toEqual(["The first half, "]);

    // The sender's next prompt: the joiner shows it as the user's message, with its answer.
    sender!.fromPage({ type: "send", text: "Now something else" });
    await joiner!.until("the second answer", () => pageState(joiner!.posted).entries.some((e) => e.kind === "agent" && e.text === "Second answer." && e.done), 20000);
    const users = pageState(joiner!.posted).entries.filter((e) => e.kind === "user");
    expect(users.map((e) => (e.kind === "user" ? [e.text, e.queued, e.turnId !== null] : []))).toEqual([["Tell me in two halves", false, true], ["Now something else", false, true]]);
    // The sender shows its own prompt once (the daemon sends it no session/input).
    expect(pageState(sender!.posted).entries.filter((e) => e.kind === "user").map((e) => (e.kind === "user" ? e.text : ""))).toEqual(["Tell me in two halves", "Now something else"]);
  }, 90000);

  it("the shared daemon stopped under the window (turnstoned stop): the window attaches again, no error", async () => {
    stopResidentAfter();
    const model = await withModel(t, [{ text: "Hi." }]);
    const host = new FakeHost(settings({ baseUrl: model.baseUrl, shareDaemon: true }), { name: "work", path: t.work });
    launch(t, host);
    await host.until("the daemon to be ready", () => host.status.text.includes("scripted"), 30000);
    // The resident daemon's pid is in its lock file.
    const pid = () => fs.readFileSync(path.join(t.home, "run", "daemon.lock"), "utf8").trim();
    const before = pid();
    await new Promise((r) => setTimeout(r, 2500));
    execFileSync(DAEMON, ["stop"], { env: process.env, stdio: "ignore", timeout: 20000 });
    await host.until("the window to attach again", () => host.daemons.length === 2 && host.status.text.includes("scripted"), 30000);
    expect((await health(host)).resident).toBe(true);
    expect(pid()).not.toBe(before);
    expect(host.launches.map((l) => l.args)).toEqual([["attach"], ["attach"]]);
    expect(host.logs).toContain("the shared daemon stopped: attaching again");
    expect(host.shown.filter((s) => s.kind === "error")).toEqual([]);
  }, 60000);

  it("Set API Key in a shared window restarts the shared daemon, which then sends the key", async () => {
    stopResidentAfter();
    const requests = path.join(t.dir, "requests.jsonl");
    const model = await withModel(t, [{ text: "With the key." }], { requestLog: requests });
    const host = new FakeHost(settings({ baseUrl: model.baseUrl, shareDaemon: true }), { name: "work", path: t.work });
    launch(t, host);
    await host.until("the daemon to be ready", () => host.status.text.includes("scripted"), 30000);
    host.respond = (s) => (s.kind === "input" ? "sk-for-the-shared-daemon" : s.message.startsWith("API key saved") ? RESTART_SHARED : undefined);
    await host.commands.get("turnstoned.setApiKey")!();
    expect(host.shown.find((s) => s.message.startsWith("API key saved"))).toMatchObject({ message: "API key saved. Restart the shared daemon (for every client) to use it?", actions: [RESTART_SHARED] });
    await host.until("the restarted daemon", () => host.daemons.length === 2 && host.status.text.includes("scripted"), 30000);
    expect(host.logs.some((l) => l.startsWith("turnstoned stop: exit 0"))).toBe(true);
    host.fromPage({ type: "ready" });
    host.fromPage({ type: "send", text: "hello" });
    await host.until("the answer", () => sawEvent(host, "turn/completed"), 20000);
    const sent = fs.readFileSync(requests, "utf8").trim().split("\n").map((l) => JSON.parse(l) as { authorization: string | null });
    expect(sent.at(-1)!.authorization).toBe("Bearer sk-for-the-shared-daemon");
  }, 60000);
});
