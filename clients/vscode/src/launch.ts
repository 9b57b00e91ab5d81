/** How the daemon is started, and what to tell the user when it cannot be. */
import * as fs from "node:fs";
import * as path from "node:path";
import type { DaemonHealthResult } from "./protocol";
import type { Settings } from "./settings";

export interface Launch {
  command: string;
  args: string[];
  env: Record<string, string>;
}

/** The environment variable the API key from SecretStorage travels in. */
export const API_KEY_ENV = "OPENAI_API_KEY";

/**
 * The daemon's command line and environment. The API key goes into the environment only, so
 * it never appears in settings.json, a command line or the protocol.
 */
export function daemonLaunch(settings: Settings, apiKey: string | undefined, base: NodeJS.ProcessEnv): Launch {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(base)) if (value !== undefined) env[key] = value;
  env.TURNSTONED_LOG = settings.logLevel;
  if (settings.baseUrl) env.OPENAI_BASE_URL = settings.baseUrl;
  if (settings.model) env.TURNSTONED_MODEL = settings.model;
  if (apiKey) env[API_KEY_ENV] = apiKey;
  return { command: settings.command, args: [...settings.args], env };
}

/**
 * Whether to reach the user's resident daemon (`<daemon> attach`) rather than start one of this
 * window's own: `turnstoned.shareDaemon` is on, `turnstoned.args` is empty (arguments are for a
 * daemon started as given) and the command is turnstoned itself (found, or configured by that
 * name: another program, a wrapper script, is started as it is).
 */
export function sharesDaemon(settings: Settings, found: { command: string; via: string }): boolean {
  if (!settings.shareDaemon || settings.args.length) return false;
  return found.via !== "setting" || path.basename(found.command) === "turnstoned";
}

/**
 * What to say when the shared daemon uses another model or server than this window would start
 * it with (it keeps the environment of whoever started it), or null when they agree. `env` is
 * the launch environment: the settings' model and base URL, else what VS Code's environment has.
 */
export function sharedMismatch(health: DaemonHealthResult, env: Record<string, string>): string | null {
  if (!health.resident || typeof health.model !== "string") return null;
  const model = env.TURNSTONED_MODEL || null;
  const url = env.OPENAI_BASE_URL || null;
  const theirs = health.modelUrl ?? null;
  const trim = (u: string | null) => (u ?? "").replace(/\/+$/, "");
  if ((!model || model === health.model) && (!url || trim(url) === trim(theirs))) return null;
  return `The shared turnstoned daemon uses ${health.model} at ${theirs ?? "OpenAI"}, but your settings say ${model ?? health.model} at ${url ?? theirs ?? "OpenAI"} (it was started with other settings).`;
}

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/** The executable a command names (absolute, relative to `cwd`, or found on PATH), if any. */
export function resolveCommand(command: string, env: Record<string, string | undefined>, cwd = process.cwd()): string | undefined {
  if (command.includes("/") || command.includes(path.sep)) {
    const file = path.resolve(cwd, command);
    return isExecutable(file) ? file : undefined;
  }
  for (const dir of (env.PATH ?? "").split(path.delimiter)) {
    if (!dir) continue;
    const file = path.join(dir, command);
    if (isExecutable(file)) return file;
  }
  return undefined;
}

/** The last lines the daemon wrote to stderr, kept to explain a failure. */
export class StderrTail {
  private lines: string[] = [];
  private partial = "";

  constructor(private readonly keep = 40) {}

  push(chunk: string): void {
    const parts = (this.partial + chunk).split(/\r?\n/);
    this.partial = parts.pop() ?? "";
    this.lines.push(...parts);
    if (this.lines.length > this.keep) this.lines = this.lines.slice(-this.keep);
  }

  text(maxLines = 12): string {
    const all = this.partial ? [...this.lines, this.partial] : this.lines;
    return all.slice(-Math.min(maxLines, this.keep)).join("\n").trim();
  }

  clear(): void {
    this.lines = [];
    this.partial = "";
  }
}

export interface Problem {
  message: string;
  detail: string;
}

const INSTALL_HINT =
  "Run “turnstoned: Install the Daemon”, or install turnstoned yourself (`pipx install turnstoned`, or in a checkout " +
  "`python3 -m venv .venv && .venv/bin/pip install -e .`) and leave `turnstoned.command` empty or set it to the daemon.";

/** The daemon program could not be found or run. */
export function missingDaemon(command: string): Problem {
  return {
    message: `turnstoned: the daemon \`${command}\` was not found (not on PATH, or not executable).`,
    detail: INSTALL_HINT,
  };
}

/** No daemon on PATH, in the Python extension's interpreter or in the private environment. */
export function notInstalled(): Problem {
  return {
    message: "turnstoned: the daemon is not installed.",
    detail: "It is not on PATH, the Python interpreter selected in VS Code has no `turnstoned`, and there is no private install yet. Install it into an environment of its own (Python 3.11+ needed), or set `turnstoned.command`.",
  };
}

/** The daemon exited or failed to initialize; the stderr tail usually says why. */
export function daemonStopped(command: string, exit: { code?: number | null; signal?: string | null }, tail: string): Problem {
  const how = exit.signal ? `was killed by ${exit.signal}` : exit.code != null ? `exited with code ${exit.code}` : "stopped";
  const hint = /No module named|ModuleNotFoundError|ImportError/.test(tail)
    ? "Its Python environment is incomplete; reinstall it. " + INSTALL_HINT
    : "Fix the cause below (or the model settings), then run “turnstoned: Restart the Daemon”.";
  return {
    message: `turnstoned: the daemon \`${command}\` ${how}.`,
    detail: tail ? `${hint}\n\nLast lines of its stderr:\n${tail}` : hint,
  };
}
