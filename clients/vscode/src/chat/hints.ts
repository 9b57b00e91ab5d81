/** What to tell the user about a turn error, by its kind. */
import type { TurnErrorKind } from "../protocol";

const HINTS: Partial<Record<TurnErrorKind, string>> = {
  notConfigured: "Set the model in Settings (turnstoned.model, turnstoned.baseUrl) and the key with “turnstoned: Set API Key”, then restart the daemon.",
  unauthorized: "The model server refused the key: run “turnstoned: Set API Key”.",
  rateLimited: "The model server is rate limiting; wait a moment and send again.",
  contextWindowExceeded: "The conversation no longer fits the model's context: start a new chat.",
  badRequest: "The model server rejected the request; check the model name in Settings.",
  upstreamUnavailable: "The model server cannot be reached: is it running at turnstoned.baseUrl?",
  turnLimit: "The turn reached its limit of model calls; send “continue” to go on.",
  internal: "The daemon failed; its log is in the turnstoned output channel.",
};

export function errorHint(kind: string): string {
  return HINTS[kind as TurnErrorKind] ?? "See the turnstoned output channel for details.";
}
