/** The daemon's lifecycle: start through the host, watch it, restart, explain failures. */
import type { ApprovalBroker } from "./approvals";
import { TurnstonedClient } from "./client";
import type { DaemonEvent } from "./protocol";
import { ElicitBroker } from "./elicit";
import { Emitter } from "./events";
import type { DaemonHandle, Host } from "./host";
import { daemonLaunch, daemonStopped, missingDaemon, notInstalled, sharedMismatch, sharesDaemon, StderrTail, type Launch, type Problem } from "./launch";
import { FOUND_KEY, installDaemon, InstallError, locateDaemon, runProcess, type Found, type Runner } from "./locate";
import { INITIALIZATION_OPTIONS, type EditorServices } from "./editor";
import { askMcpTrust, showLoginPage } from "./mcp";
import { askPolicyTrust } from "./policies";
import type { DaemonHealthResult } from "./protocol";

/** The SecretStorage key of the model server's API key. */
export const API_KEY_SECRET = "turnstoned.apiKey";

export type DaemonState =
  | { state: "starting" }
  | { state: "ready"; health: DaemonHealthResult }
  | { state: "stopped"; problem: Problem | null };

/** What a test may replace: the environment the daemon starts with, how programs run, what an install installs. */
export interface DaemonOptions {
  env?: NodeJS.ProcessEnv;
  run?: Runner;
  /** pip's source when no wheel ships inside the extension (default: `turnstoned` from the package index). */
  installSource?: string;
}

/** The offer's action when no daemon is found. */
export const INSTALL_ACTION = "Install turnstoned";
/** A shared daemon that stops this long after it came up is attached to again. */
const SHARED_RECONNECT_AFTER_MS = 2000;
/** The fix offered when the shared daemon runs with other settings. */
export const RESTART_SHARED = "Restart the Shared Daemon";

export class Daemon {
  private launched = "turnstoned";
  private installing: Promise<TurnstonedClient | null> | null = null;
  private handle: DaemonHandle | null = null;
  private current: TurnstonedClient | null = null;
  private stopping = false;
  private superseded = false;
  /** What the last start found to run: `restartShared` runs its `stop`. */
  private found: Found | null = null;
  /** When the running daemon answered its first request. */
  private upSince = 0;
  private generation = 0;
  private readonly tail = new StderrTail();
  private readonly states = new Emitter<DaemonState>();
  private readonly events = new Emitter<DaemonEvent>();
  private starting: Promise<TurnstonedClient | null> | null = null;
  status: DaemonState = { state: "stopped", problem: null };
  /** The MCP servers' questions still waiting for the user. */
  readonly elicitation = new ElicitBroker();

  readonly onState = this.states.event;
  /** Every notification of the running daemon (across restarts). */
  readonly onEvent = this.events.event;

  constructor(private readonly host: Host, private readonly broker: ApprovalBroker, private readonly editor?: EditorServices, private readonly options: DaemonOptions = {}) {}

  /** The running daemon is the resident one other clients share (reached through `attach`). */
  get shared(): boolean {
    return this.status.state === "ready" && this.status.health.resident === true;
  }

  get client(): TurnstonedClient | null {
    return this.status.state === "ready" ? this.current : null;
  }

  /** The running client, starting the daemon if needed; null when it cannot start. */
  ready(): Promise<TurnstonedClient | null> {
    if (this.status.state === "ready" && this.current) return Promise.resolve(this.current);
    return (this.starting ??= this.start().finally(() => (this.starting = null)));
  }

  private setState(state: DaemonState): void {
    this.status = state;
    this.states.fire(state);
  }

  private async start(): Promise<TurnstonedClient | null> {
    const generation = ++this.generation;
    const apiKey = await this.host.secret(API_KEY_SECRET);
    const settings = this.host.settings();
    const launch = daemonLaunch(settings, apiKey, this.options.env ?? process.env);
    this.setState({ state: "starting" });
    const cwd = this.host.activeFolder()?.path;
    const found = await locateDaemon(settings.command, {
      env: launch.env,
      cwd,
      storage: this.host.globalStorage(),
      pythonInterpreter: () => this.host.pythonInterpreter(),
      run: this.options.run ?? runProcess,
      remembered: this.host.globalMemento<Found>(FOUND_KEY),
    });
    if (generation !== this.generation) return null;
    if (!found) return settings.command ? this.fail(missingDaemon(settings.command)) : this.offerInstall();
    // A configured command always wins; a found one is remembered, so the next start looks no further.
    if (found.via !== "setting") await this.host.setGlobalMemento(FOUND_KEY, found);
    this.found = found;
    if (sharesDaemon(settings, found)) {
      // The resident daemon, through `attach`: a daemon that does not answer so (an older one,
      // a broken socket) is not an error, this window starts one of its own instead.
      const client = await this.connect(generation, found, launch, ["attach"], cwd, true).catch((err: unknown) => {
        this.host.log(`the shared daemon did not answer (${err instanceof Error ? err.message : String(err)}): starting a daemon of this window's own`);
        return null;
      });
      if (generation !== this.generation) return null;
      if (client) {
        this.checkShared(client, launch.env);
        return client;
      }
      await this.stopHandle();
    }
    try {
      return await this.connect(generation, found, launch, launch.args, cwd, false);
    } catch (err) {
      if (generation !== this.generation) return null;
      const reason = err instanceof Error ? err.message : String(err);
      await this.stopHandle();
      // What was found may be gone or broken: look again next time.
      if (found.via !== "setting") await this.host.setGlobalMemento(FOUND_KEY, undefined);
      return this.fail(daemonStopped(this.launched, {}, this.tail.text() || reason));
    }
  }

  /**
   * Start `found` with `args` and initialize it; throws when it does not come up. A shared
   * attempt's exit before it is ready is the caller's to handle (it falls back).
   */
  private async connect(generation: number, found: Found, launch: Launch, args: string[], cwd: string | undefined, shared: boolean): Promise<TurnstonedClient> {
    this.launched = [found.command, ...found.args, ...args].join(" ");
    this.host.log(`daemon: ${this.launched}${found.via === "setting" ? "" : ` (found: ${found.via})`}`);
    this.tail.clear();
    this.stopping = false;
    let up = false;
    this.handle = await this.host.startDaemon({ ...launch, command: found.command, args: [...found.args, ...args] }, cwd, {
      onStderr: (chunk) => this.tail.push(chunk),
      onExit: (code, signal) => {
        if (shared && !up) return;
        this.exited(generation, code, signal);
      },
    }, INITIALIZATION_OPTIONS);
    const client = new TurnstonedClient(this.handle.connection);
    client.setApprovalHandler((params, token) => this.broker.handle(params, token));
    // A project's .mcp.json or policies file asks for trust: a modal with exactly what it holds.
    client.setTrustHandler((params, token) => askMcpTrust(this.host, params, token));
    client.setPolicyTrustHandler((params, token) => askPolicyTrust(this.host, params, token));
    // An MCP server's question while its tool runs: a form in the chat (or a notification).
    client.setElicitHandler((params, token) => this.elicitation.handle(params, token));
    // An MCP server's login page (1.14): the browser, and its address to copy.
    client.setAuthorizeHandler((params) => showLoginPage(this.host, params));
    // What the editor shows: diagnostics, open files, symbols, unsaved buffers (1.12).
    this.editor?.serve(client);
    client.onEvent((event) => {
      if (event.method === "approval/resolved") this.broker.resolved(event.params);
      // A question that outlived its turn has no call left to answer.
      if (event.method === "turn/completed") this.elicitation.withdrawAll(event.params.sessionId);
      this.events.fire(event);
    });
    const health = await client.health();
    up = true;
    this.upSince = Date.now();
    this.current = client;
    this.setState({ state: "ready", health });
    this.host.log(`daemon ready: turnstoned ${health.version}, protocol ${health.protocolVersion}, model ${health.model ?? "(none)"}${shared ? ", shared" : ""}`);
    return client;
  }

  /** The shared daemon runs with other settings than this window's: say so, offer the fix. */
  private checkShared(client: TurnstonedClient, env: Record<string, string>): void {
    const health = this.status.state === "ready" ? this.status.health : null;
    const said = health && sharedMismatch(health, env);
    if (!said) return;
    this.host.log(said);
    void this.host.warn(said, RESTART_SHARED, "Open Settings").then(async (choice) => {
      if (choice === "Open Settings") this.host.openSettings("turnstoned.shareDaemon");
      // The answer may come after a restart already replaced that daemon.
      if (choice === RESTART_SHARED && this.current === client) await this.restartShared();
    });
  }

  /**
   * Stop the shared daemon for every client (`turnstoned stop`: it keeps the settings of whoever
   * started it) and start it again with this window's.
   */
  async restartShared(): Promise<TurnstonedClient | null> {
    const daemon = this.found;
    await this.stop();
    if (daemon) {
      const result = await (this.options.run ?? runProcess)(daemon.command, [...daemon.args, "stop"], undefined, 30_000);
      this.host.log(`turnstoned stop: exit ${result.code ?? "?"} ${result.output.trim()}`);
    }
    return this.ready();
  }

  private fail(problem: Problem): null {
    this.setState({ state: "stopped", problem });
    this.host.log(`${problem.message}\n${problem.detail}`);
    // A restart asked for while this start ran (the settings changed) is already on its way.
    if (this.superseded) return null;
    void this.host.error(problem.message, problem.detail, "Restart", "Open Settings", "Show Output").then((choice) => {
      if (choice === "Restart") void this.restart();
      else if (choice === "Open Settings") this.host.openSettings("turnstoned");
      else if (choice === "Show Output") this.host.showOutput();
    });
    return null;
  }

  /** No daemon anywhere: say so and offer to install one. */
  private offerInstall(): null {
    const problem = notInstalled();
    this.setState({ state: "stopped", problem });
    this.host.log(`${problem.message}\n${problem.detail}`);
    if (this.superseded) return null;
    void this.host.error(problem.message, problem.detail, INSTALL_ACTION, "Open Settings", "Show Output").then((choice) => {
      if (choice === INSTALL_ACTION) void this.install();
      else if (choice === "Open Settings") this.host.openSettings("turnstoned.command");
      else if (choice === "Show Output") this.host.showOutput();
    });
    return null;
  }

  /**
   * Install the daemon into the private environment (with a progress notification, its output
   * in the log), remember it and start it.
   */
  install(): Promise<TurnstonedClient | null> {
    return (this.installing ??= this.runInstall().finally(() => (this.installing = null)));
  }

  private async runInstall(): Promise<TurnstonedClient | null> {
    let found: Found;
    try {
      found = await this.host.withProgress("Installing turnstoned", (report) => installDaemon({
        storage: this.host.globalStorage(),
        extensionPath: this.host.extensionPath(),
        source: this.options.installSource,
        run: this.options.run ?? runProcess,
        log: (line) => this.host.log(`[install] ${line}`),
        progress: report,
      }));
    } catch (err) {
      const text = err instanceof InstallError ? err.message : `turnstoned: the install failed: ${err instanceof Error ? err.message : String(err)}`;
      const [message = text, ...rest] = text.split("\n");
      this.host.log(text);
      void this.host.error(message, rest.join("\n") || "The turnstoned output has the details.", "Show Output", "Open Settings").then((choice) => {
        if (choice === "Show Output") this.host.showOutput();
        else if (choice === "Open Settings") this.host.openSettings("turnstoned.command");
      });
      return null;
    }
    await this.host.setGlobalMemento(FOUND_KEY, found);
    return this.restart();
  }

  private exited(generation: number, code: number | null, signal: string | null): void {
    if (generation !== this.generation || this.stopping) return;
    this.broker.withdrawAll();
    this.elicitation.withdrawAll();
    this.current?.dispose();
    this.current = null;
    this.handle = null;
    // The shared daemon stopped cleanly (`turnstoned stop`, another client's restart): the
    // bridge ends with 0. Attach again, which starts one; a bridge that keeps ending at once
    // is a failure like any other.
    if (this.shared && code === 0 && Date.now() - this.upSince > SHARED_RECONNECT_AFTER_MS) {
      this.host.log("the shared daemon stopped: attaching again");
      void this.restart();
      return;
    }
    this.fail(daemonStopped(this.launched, { code, signal }, this.tail.text()));
  }

  /** Refresh the health figures shown in the status bar. */
  async refreshHealth(): Promise<void> {
    const client = this.client;
    if (!client) return;
    try {
      this.setState({ state: "ready", health: await client.health() });
    } catch (err) {
      this.host.log(`daemon/health failed: ${String(err)}`);
    }
  }

  private async stopHandle(): Promise<void> {
    const handle = this.handle;
    this.handle = null;
    this.current?.dispose();
    this.current = null;
    if (!handle) return;
    this.stopping = true;
    try {
      await handle.stop();
    } catch (err) {
      this.host.log(`stopping the daemon: ${String(err)}`);
    }
  }

  async stop(): Promise<void> {
    this.generation++;
    this.broker.withdrawAll();
    this.elicitation.withdrawAll();
    await this.stopHandle();
    this.setState({ state: "stopped", problem: null });
  }

  async restart(): Promise<TurnstonedClient | null> {
    if (this.starting) {
      // Let the start in flight finish (it may have read the settings just replaced).
      this.superseded = true;
      await this.starting;
      this.superseded = false;
    }
    await this.stop();
    return this.ready();
  }
}
