/** The extension's settings, typed in one place; their defaults live in package.json. */
import manifest from "../package.json";
import { isMode } from "./messages/modes";
import type { ApprovalMode } from "./protocol";

export type LogLevel = "DEBUG" | "INFO" | "WARNING" | "ERROR";

export interface Settings {
  /** The daemon program: a name on PATH or an absolute path; "" finds (or installs) it. */
  command: string;
  /** Its arguments; with any, the daemon starts as given (never shared). */
  args: string[];
  /** Reach the user's resident daemon through `turnstoned attach` (a bare turnstoned command only). */
  shareDaemon: boolean;
  /** Model for new chats; "" leaves it to the daemon. */
  model: string;
  /** OpenAI-compatible base URL; "" leaves it to the daemon's config or environment. */
  baseUrl: string;
  logLevel: LogLevel;
  skipPermissions: boolean;
  /** The approval mode new chats start in; null leaves it to the daemon's `[approvals] mode`. */
  approvalMode: ApprovalMode | null;
  /** Send the active file, selection, visible lines and that file's problems with each prompt. */
  editorContext: boolean;
}

const SECTION = "turnstoned";
const LOG_LEVELS: readonly LogLevel[] = ["DEBUG", "INFO", "WARNING", "ERROR"];

/** Settings whose change needs a daemon restart to take effect. */
export const RESTART_KEYS: readonly (keyof Settings)[] = ["command", "args", "shareDaemon", "model", "baseUrl", "logLevel"];

type Properties = Record<string, { default?: unknown }>;

function manifestDefault(key: keyof Settings): unknown {
  const properties = manifest.contributes.configuration.properties as Properties;
  return properties[`${SECTION}.${key}`]?.default;
}

function str(value: unknown, key: keyof Settings): string {
  if (typeof value === "string") return value.trim();
  const fallback = manifestDefault(key);
  return typeof fallback === "string" ? fallback : "";
}

/**
 * Read the settings through `get` (the configuration section's getter); a value of the wrong
 * type falls back to the default declared in package.json.
 */
export function readSettings(get: (key: string) => unknown): Settings {
  const args = get("args");
  const level = get("logLevel");
  const skip = get("skipPermissions");
  const mode = get("approvalMode");
  const editor = get("editorContext");
  const share = get("shareDaemon");
  return {
    command: str(get("command"), "command"),
    args: Array.isArray(args) ? args.filter((a): a is string => typeof a === "string") : [],
    shareDaemon: typeof share === "boolean" ? share : manifestDefault("shareDaemon") !== false,
    model: str(get("model"), "model"),
    baseUrl: str(get("baseUrl"), "baseUrl"),
    logLevel: LOG_LEVELS.includes(level as LogLevel) ? (level as LogLevel) : (manifestDefault("logLevel") as LogLevel),
    skipPermissions: typeof skip === "boolean" ? skip : manifestDefault("skipPermissions") === true,
    approvalMode: isMode(mode) ? mode : null,
    editorContext: typeof editor === "boolean" ? editor : manifestDefault("editorContext") !== false,
  };
}

export const SETTINGS_SECTION = SECTION;
