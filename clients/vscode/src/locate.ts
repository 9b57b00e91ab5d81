/**
 * Finding the daemon when `turnstoned.command` is empty, and installing it into a private
 * environment under the extension's global storage when it is nowhere to be found.
 */
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { resolveCommand } from "./launch";

/** Where a daemon command came from. */
export type FoundVia = "setting" | "path" | "python" | "private";

/** A daemon to start: the program and the arguments before the user's `turnstoned.args`. */
export interface Found {
  command: string;
  args: string[];
  via: FoundVia;
}

/** The globalState key of the last command found (not used when the setting names one). */
export const FOUND_KEY = "turnstoned.foundDaemon";

/** The oldest Python the daemon runs on (pyproject.toml's requires-python). */
export const MIN_PYTHON: readonly [number, number] = [3, 11];

/** What a run of a program gave: its exit code (null when it could not start) and output. */
export interface RunResult {
  code: number | null;
  output: string;
}

/** Run a program; every output line goes to `onLine` as it comes. */
export type Runner = (command: string, args: string[], onLine?: (line: string) => void, timeoutMs?: number) => Promise<RunResult>;

export const runProcess: Runner = (command, args, onLine, timeoutMs = 600_000) =>
  new Promise((resolve) => {
    let output = "";
    let partial = "";
    const take = (chunk: string) => {
      output += chunk;
      const parts = (partial + chunk).split(/\r?\n/);
      partial = parts.pop() ?? "";
      for (const line of parts) if (line.trim()) onLine?.(line);
    };
    let child;
    try {
      child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, PIP_DISABLE_PIP_VERSION_CHECK: "1" } });
    } catch (err) {
      resolve({ code: null, output: String(err) });
      return;
    }
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.stdout.setEncoding("utf8").on("data", take);
    child.stderr.setEncoding("utf8").on("data", take);
    child.on("error", (err) => { clearTimeout(timer); resolve({ code: null, output: output + err.message }); });
    child.on("close", (code) => {
      clearTimeout(timer);
      if (partial.trim()) onLine?.(partial);
      resolve({ code, output });
    });
  });

/** The private environment's directory and its daemon program. */
export function privateVenv(storage: string): { dir: string; daemon: string; python: string } {
  const dir = path.join(storage, "venv");
  const bin = process.platform === "win32" ? path.join(dir, "Scripts") : path.join(dir, "bin");
  const exe = process.platform === "win32" ? ".exe" : "";
  return { dir, daemon: path.join(bin, `turnstoned${exe}`), python: path.join(bin, `python${exe}`) };
}

export interface LocateDeps {
  /** The environment the daemon starts with (its PATH is searched). */
  env: Record<string, string | undefined>;
  cwd?: string | undefined;
  /** The extension's global storage directory. */
  storage: string;
  /** The Python extension's selected interpreter, if any. */
  pythonInterpreter(): Promise<string | undefined>;
  run: Runner;
  /** The command found last time (globalState). */
  remembered?: Found | undefined;
}

function executable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/** Whether this interpreter has the daemon's package. */
export async function canImport(run: Runner, python: string): Promise<boolean> {
  return (await run(python, ["-I", "-c", "import turnstoned"], undefined, 20_000)).code === 0;
}

/**
 * The daemon to start. A configured command always wins (null when it names nothing runnable).
 * Otherwise: the command remembered from last time while it still exists, then `turnstoned` on
 * PATH, the Python extension's interpreter when it can import the package, the private
 * environment. Null: nothing found (offer the install).
 */
export async function locateDaemon(configured: string, deps: LocateDeps): Promise<Found | null> {
  if (configured) {
    const program = resolveCommand(configured, deps.env, deps.cwd);
    return program ? { command: program, args: [], via: "setting" } : null;
  }
  const remembered = deps.remembered;
  if (remembered && path.isAbsolute(remembered.command) && executable(remembered.command)) return remembered;
  const onPath = resolveCommand("turnstoned", deps.env, deps.cwd);
  if (onPath) return { command: onPath, args: [], via: "path" };
  let python: string | undefined;
  try {
    python = await deps.pythonInterpreter();
  } catch {
    python = undefined;
  }
  if (python) {
    const program = path.isAbsolute(python) ? (executable(python) ? python : undefined) : resolveCommand(python, deps.env, deps.cwd);
    if (program && (await canImport(deps.run, program))) return { command: program, args: ["-I", "-m", "turnstoned"], via: "python" };
  }
  const venv = privateVenv(deps.storage);
  if (executable(venv.daemon)) return { command: venv.daemon, args: [], via: "private" };
  return null;
}

/** An install that could not be done, said so the user can act on it. */
export class InstallError extends Error {}

export interface InstallDeps {
  storage: string;
  /** The extension's directory: a wheel in `dist/daemon/` is installed when there is one. */
  extensionPath: string;
  /** What pip installs when no wheel ships (a path or a package name); default `turnstoned`. */
  source?: string | undefined;
  run: Runner;
  log(line: string): void;
  progress(message: string): void;
  /** The system Python to create the environment with (default: `python3`, else `python`). */
  python?: string[];
}

/** The version a `python --version` printed, when it is one. */
export function parsePythonVersion(text: string): [number, number, number] | null {
  const m = /Python (\d+)\.(\d+)(?:\.(\d+))?/.exec(text);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)] : null;
}

/** The wheel shipped inside the extension, if any. */
export function shippedWheel(extensionPath: string): string | undefined {
  const dir = path.join(extensionPath, "dist", "daemon");
  try {
    const wheel = fs.readdirSync(dir).filter((f) => f.startsWith("turnstoned-") && f.endsWith(".whl")).sort().pop();
    return wheel ? path.join(dir, wheel) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Create `<storage>/venv` with the system Python and pip-install the daemon into it: the shipped
 * wheel, else `source`. Every line of output goes to the log.
 */
export async function installDaemon(deps: InstallDeps): Promise<Found> {
  const [major, minor] = MIN_PYTHON;
  const need = `${major}.${minor}`;
  deps.progress("looking for Python");
  let system: string | undefined;
  let found: [number, number, number] | null = null;
  for (const candidate of deps.python ?? ["python3", "python"]) {
    const result = await deps.run(candidate, ["--version"], undefined, 20_000);
    if (result.code !== 0) continue;
    found = parsePythonVersion(result.output);
    system = candidate;
    break;
  }
  if (!system) throw new InstallError(`turnstoned needs Python ${need} or newer, and no \`python3\` was found on PATH. Install Python ${need}+ (python.org or your package manager), then try again.`);
  if (!found || found[0] < major || (found[0] === major && found[1] < minor)) {
    const what = found ? found.join(".") : "an unknown version";
    throw new InstallError(`turnstoned needs Python ${need} or newer; \`${system}\` is ${what}. Install Python ${need}+, or set \`turnstoned.command\` to a daemon you installed.`);
  }
  deps.log(`installing turnstoned with ${system} ${found.join(".")}`);
  const venv = privateVenv(deps.storage);
  fs.mkdirSync(deps.storage, { recursive: true });
  fs.rmSync(venv.dir, { recursive: true, force: true });
  const step = async (message: string, command: string, args: string[]) => {
    deps.progress(message);
    deps.log(`$ ${[command, ...args].join(" ")}`);
    const result = await deps.run(command, args, (line) => deps.log(line));
    if (result.code !== 0) {
      const tail = result.output.trim().split(/\r?\n/).slice(-6).join("\n");
      throw new InstallError(`turnstoned: ${message} failed (${result.code === null ? "it could not run" : `exit code ${result.code}`}).\n${tail}`);
    }
  };
  await step("creating its Python environment", system, ["-m", "venv", venv.dir]);
  const source = shippedWheel(deps.extensionPath) ?? deps.source ?? "turnstoned";
  await step("installing the daemon and its dependencies", venv.python, ["-m", "pip", "install", "--disable-pip-version-check", source]);
  if (!executable(venv.daemon)) throw new InstallError(`turnstoned: the install finished but ${venv.daemon} is missing.`);
  deps.log(`installed: ${venv.daemon}`);
  return { command: venv.daemon, args: [], via: "private" };
}
