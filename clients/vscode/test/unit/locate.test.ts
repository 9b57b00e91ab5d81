/** Finding the daemon without a typed path, in order, and the install offer when it is nowhere. */
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import manifest from "../../package.json";
import { ApprovalBroker } from "../../src/approvals";
import { Daemon, INSTALL_ACTION } from "../../src/daemon";
import { FOUND_KEY, installDaemon, locateDaemon, parsePythonVersion, privateVenv, type Found, type LocateDeps, type Runner } from "../../src/locate";
import { settings } from "../support/app";
import { tempDir } from "../support/daemon";
import { FakeHost } from "../support/fakeHost";

function program(file: string): string {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, "#!/bin/sh\nexit 0\n", { mode: 0o755 });
  return file;
}

/** A runner that records calls and answers from `answer` (default: exit 1). */
function runner(answer: (command: string, args: string[]) => { code: number | null; output?: string } = () => ({ code: 1 })): Runner & { calls: string[][] } {
  const calls: string[][] = [];
  const run = (async (command: string, args: string[], onLine?: (line: string) => void) => {
    calls.push([command, ...args]);
    const { code, output = "" } = answer(command, args);
    for (const line of output.split("\n")) if (line) onLine?.(line);
    return { code, output };
  }) as Runner & { calls: string[][] };
  run.calls = calls;
  return run;
}

function world(): { dir: string; host: FakeHost; deps: (over?: Partial<LocateDeps>) => LocateDeps } {
  const dir = tempDir("turnstoned-locate-");
  const host = new FakeHost(settings({ command: "" }), { name: "work", path: dir });
  host.storageDir = path.join(dir, "storage");
  const deps = (over: Partial<LocateDeps> = {}): LocateDeps => ({
    env: { PATH: path.join(dir, "empty-bin") },
    cwd: dir,
    storage: host.globalStorage(),
    pythonInterpreter: () => host.pythonInterpreter(),
    run: runner(),
    remembered: host.globalMemento<Found>(FOUND_KEY),
    ...over,
  });
  return { dir, host, deps };
}

describe("finding the daemon", () => {
  it("takes turnstoned on PATH first", async () => {
    const { dir, host, deps } = world();
    const onPath = program(path.join(dir, "bin", "turnstoned"));
    program(privateVenv(host.globalStorage()).daemon);
    host.selectedPython = program(path.join(dir, "py", "python"));
    const run = runner(() => ({ code: 0 }));
    expect(await locateDaemon("", deps({ env: { PATH: path.join(dir, "bin") }, run }))).toEqual({ command: onPath, args: [], via: "path" });
    expect(run.calls).toEqual([]);
  });

  it("then the Python extension's interpreter when it can import turnstoned, run as -I -m turnstoned", async () => {
    const { dir, host, deps } = world();
    program(privateVenv(host.globalStorage()).daemon);
    const python = (host.selectedPython = program(path.join(dir, "py", "python")));
    const run = runner((command, args) => ({ code: command === python && args.join(" ") === "-I -c import turnstoned" ? 0 : 1 }));
    expect(await locateDaemon("", deps({ run }))).toEqual({ command: python, args: ["-I", "-m", "turnstoned"], via: "python" });
  });

  it("then the private environment (an interpreter without the package is passed over)", async () => {
    const { dir, host, deps } = world();
    const daemon = program(privateVenv(host.globalStorage()).daemon);
    host.selectedPython = program(path.join(dir, "py", "python"));
    const run = runner(() => ({ code: 1, output: "ModuleNotFoundError: No module named 'turnstoned'" }));
    expect(await locateDaemon("", deps({ run }))).toEqual({ command: daemon, args: [], via: "private" });
    expect(run.calls).toEqual([[host.selectedPython, "-I", "-c", "import turnstoned"]]);
  });

  it("finds nothing when there is nothing", async () => {
    const { deps } = world();
    expect(await locateDaemon("", deps())).toBeNull();
  });

  it("a configured command always wins; one that names nothing runnable is not replaced", async () => {
    const { dir, deps } = world();
    program(path.join(dir, "bin", "turnstoned"));
    const mine = program(path.join(dir, "mine", "turnstoned"));
    expect(await locateDaemon(mine, deps({ env: { PATH: path.join(dir, "bin") } }))).toEqual({ command: mine, args: [], via: "setting" });
    expect(await locateDaemon(path.join(dir, "missing"), deps({ env: { PATH: path.join(dir, "bin") } }))).toBeNull();
  });

  it("uses what it found last time while it exists", async () => {
    const { dir, deps } = world();
    const onPath = program(path.join(dir, "bin", "turnstoned"));
    const python = program(path.join(dir, "py", "python"));
    const remembered: Found = { command: python, args: ["-I", "-m", "turnstoned"], via: "python" };
    expect(await locateDaemon("", deps({ env: { PATH: path.join(dir, "bin") }, remembered }))).toEqual(remembered);
    fs.rmSync(python);
    expect(await locateDaemon("", deps({ env: { PATH: path.join(dir, "bin") }, remembered }))).toEqual({ command: onPath, args: [], via: "path" });
  });
});

describe("the install offer", () => {
  function daemonWith(run: Runner): { host: FakeHost; daemon: Daemon } {
    const { dir, host } = world();
    const daemon = new Daemon(host, new ApprovalBroker(), undefined, { env: { PATH: path.join(dir, "empty-bin") }, run });
    return { host, daemon };
  }

  it("is made when nothing is found, and says why", async () => {
    const { host, daemon } = daemonWith(runner());
    expect(await daemon.ready()).toBeNull();
    expect(host.shown.at(-1)).toMatchObject({ kind: "error", message: "turnstoned: the daemon is not installed.", actions: [INSTALL_ACTION, "Open Settings", "Show Output"] });
    expect(daemon.status).toMatchObject({ state: "stopped", problem: { message: "turnstoned: the daemon is not installed." } });
  });

  it("is not made when the configured command is missing: that command is named", async () => {
    const { host, daemon } = daemonWith(runner());
    host.settingsValue = settings({ command: "/nonexistent/turnstoned" });
    expect(await daemon.ready()).toBeNull();
    expect(host.shown.at(-1)?.message).toContain("`/nonexistent/turnstoned` was not found");
    expect(host.shown.at(-1)?.actions).not.toContain(INSTALL_ACTION);
  });

  it("says clearly when Python is missing or too old", async () => {
    for (const [answer, expected] of [
      [() => ({ code: null, output: "spawn python3 ENOENT" }), /no `python3` was found on PATH/],
      [(c: string) => ({ code: c === "python3" ? 0 : 1, output: "Python 3.9.18" }), /needs Python 3\.11 or newer; `python3` is 3\.9\.18/],
    ] as const) {
      const { host, daemon } = daemonWith(runner(answer));
      host.respond = (shown) => (shown.actions.includes(INSTALL_ACTION) ? INSTALL_ACTION : undefined);
      await daemon.ready();
      await host.until("the install's error", () => host.shown.some((s) => expected.test(s.message)));
      expect(host.progress.map((p) => [p.title, p.done])).toEqual([["Installing turnstoned", true]]);
    }
  });

  it("creates the private venv, installs the shipped wheel into it, logs pip's output and remembers it", async () => {
    const { dir, host } = world();
    const wheel = path.join(dir, "ext", "dist", "daemon", "turnstoned-0.1.0-py3-none-any.whl");
    fs.mkdirSync(path.dirname(wheel), { recursive: true });
    fs.writeFileSync(wheel, "");
    const venv = privateVenv(host.globalStorage());
    const run = runner((command, args) => {
      if (args[0] === "--version") return { code: 0, output: "Python 3.12.1" };
      if (args.join(" ") === `-m venv ${venv.dir}`) program(venv.python);
      if (command === venv.python) program(venv.daemon);
      return { code: 0, output: "Successfully installed turnstoned-0.1.0" };
    });
    const lines: string[] = [];
    const progress: string[] = [];
    const found = await installDaemon({ storage: host.globalStorage(), extensionPath: path.join(dir, "ext"), source: "/elsewhere", run, log: (l) => lines.push(l), progress: (m) => progress.push(m) });
    expect(found).toEqual({ command: venv.daemon, args: [], via: "private" });
    expect(run.calls.slice(1)).toEqual([["python3", "-m", "venv", venv.dir], [venv.python, "-m", "pip", "install", "--disable-pip-version-check", wheel]]);
    expect(lines).toContain("Successfully installed turnstoned-0.1.0");
    expect(progress).toEqual(["looking for Python", "creating its Python environment", "installing the daemon and its dependencies"]);
  });

  it("reads Python's version", () => {
    expect(parsePythonVersion("Python 3.11.7\n")).toEqual([3, 11, 7]);
    expect(parsePythonVersion("nope")).toBeNull();
  });
});

describe("the manifest", () => {
  it("activates on use, bundles before packaging, and finds the daemon by default", () => {
    const events: string[] = manifest.activationEvents;
    expect(events.filter((e) => e === "*" || e === "onStartupFinished")).toEqual([]);
    expect(events).toEqual(["onView:turnstoned.chat", "onView:turnstoned.sessions"]);
    expect(manifest.scripts["vscode:prepublish"]).toContain("node esbuild.mjs");
    expect(manifest.contributes.configuration.properties["turnstoned.command"].default).toBe("");
    expect(manifest.contributes.commands.map((c) => c.command)).toContain("turnstoned.installDaemon");
  });
});
