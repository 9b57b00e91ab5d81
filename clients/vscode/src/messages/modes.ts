/** The approval modes as the user sees them: in the chat's header, the status bar and the quick pick. */
import type { ApprovalMode, SandboxHealth } from "../protocol";

export const MODES: readonly ApprovalMode[] = ["read-only", "auto", "full-access", "plan"];

export const MODE_LABELS: Record<ApprovalMode, string> = {
  "read-only": "Read-only",
  auto: "Auto",
  "full-access": "Full access",
  plan: "Plan",
};

/** What runs unasked in a mode (`sandbox`: whether this machine has one, for auto). */
export function modeDescription(mode: ApprovalMode, sandbox: SandboxHealth | null = null): string {
  switch (mode) {
    case "read-only":
      return "Reads run unasked; edits and commands ask.";
    case "auto":
      return sandbox && !sandbox.available
        ? "Reads and workspace edits run unasked; with no sandbox on this machine, commands ask."
        : "Reads, workspace edits and sandboxed commands run unasked; the network and anything risky ask.";
    case "full-access":
      return "Everything runs unasked and outside the sandbox, except destructive calls, credentials and writes outside the workspace.";
    case "plan":
      return "The model only reads and proposes a plan; approving the plan switches to auto.";
  }
}

/** A codicon for the status bar. */
export const MODE_ICONS: Record<ApprovalMode, string> = {
  "read-only": "lock",
  auto: "shield",
  "full-access": "unlock",
  plan: "checklist",
};

export function isMode(value: unknown): value is ApprovalMode {
  return typeof value === "string" && (MODES as readonly string[]).includes(value);
}
