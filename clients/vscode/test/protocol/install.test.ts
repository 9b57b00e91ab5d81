/**
 * The one-step install for real: no daemon anywhere, the offer taken, a venv built in a temporary
 * global storage with the system python3, the daemon pip-installed into it from this repository
 * (its dependencies from pip's index or cache), and that daemon answering initialize and health.
 * About 10–15 s here (venv ~3 s, pip ~8 s). TURNSTONED_SKIP_INSTALL_TEST=1 skips it (offline machines).
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { ApprovalBroker } from "../../src/approvals";
import { Daemon, INSTALL_ACTION } from "../../src/daemon";
import { FOUND_KEY, privateVenv } from "../../src/locate";
import { settings } from "../support/app";
import { REPO, tempDir, writeConfig } from "../support/daemon";
import { FakeHost } from "../support/fakeHost";

/** PATH without any directory that holds a `turnstoned` (the repository's venv, a user install). */
function pathWithoutDaemon(): string {
  return (process.env.PATH ?? "").split(path.delimiter).filter((d) => d && !fs.existsSync(path.join(d, "turnstoned"))).join(path.delimiter);
}

describe.skipIf(process.env.TURNSTONED_SKIP_INSTALL_TEST === "1")("the install offer, for real", () => {
  it("builds the private venv, installs the daemon from the repository and starts it", async () => {
    const dir = tempDir("turnstoned-install-");
    const home = path.join(dir, "home");
    writeConfig(home);
    const host = new FakeHost(settings({ command: "" }), { name: "work", path: dir });
    host.storageDir = path.join(dir, "globalStorage");
    host.extensionDir = path.join(dir, "extension"); // no wheel ships here: pip installs REPO
    host.respond = (shown) => (shown.actions.includes(INSTALL_ACTION) ? INSTALL_ACTION : undefined);
    const env = { ...process.env, PATH: pathWithoutDaemon(), TURNSTONED_HOME: home, TURNSTONED_CONFIG: "" };
    const daemon = new Daemon(host, new ApprovalBroker(), undefined, { env, installSource: REPO });
    try {
      const started = Date.now();
      expect(await daemon.ready()).toBeNull();
      await host.until("the installed daemon ready", () => daemon.status.state === "ready" || host.shown.some((s) => s.kind === "error" && s.message !== "turnstoned: the daemon is not installed."), 110_000);
      const seconds = (Date.now() - started) / 1000;
      console.log(`install test: venv + pip install + initialize in ${seconds.toFixed(1)} s`);
      expect(host.shown.map((s) => s.message)).toEqual(["turnstoned: the daemon is not installed."]);
      expect(daemon.status.state).toBe("ready");
      const venv = privateVenv(host.storageDir);
      expect(host.launches.at(-1)?.command).toBe(venv.daemon);
      expect(host.globalMementos.get(FOUND_KEY)).toEqual({ command: venv.daemon, args: [], via: "private" });
      expect(host.progress).toMatchObject([{ title: "Installing turnstoned", done: true, messages: ["looking for Python", "creating its Python environment", "installing the daemon and its dependencies"] }]);
      expect(host.logs.some((l) => /^\[install\] Successfully installed .*turnstoned-/.test(l))).toBe(true);
      const health = await daemon.client!.health();
      expect(health.protocolVersion).toBe(1);
    } finally {
      await daemon.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
