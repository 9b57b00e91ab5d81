"""The approval gate: where it is decided whether a tool call may run, and who is asked.

The sequence (``gate.run_gate``), for the calls of one batch that need approval:

1. rate every call (``intent``: the rule table, bash read by ``turnstoned.shell``);
2. screen each: a tool policy (``policies``, with a workspace's file in
   ``policy_files``) denies, allows or keeps it asking; skip-permissions runs the
   rest; a standing grant (``grants``) runs a call it covers; a protected call
   (high or critical, outside the workspace, credentials) is covered by neither;
3. judge what is left (``judge``, optional; smart approvals may run a batch it
   fully clears);
4. ask the editor one cycle and settle its answer, call by call;
5. prepare edited calls again and check them (``edits``), asking again when an
   edit needs more than the user was shown.

``types`` holds what the gate decides (``Verdict``) and knows (``ApprovalPolicy``).
"""

from turnstoned.core.approval.gate import decide
from turnstoned.core.approval.types import ApprovalPolicy, Gate, Verdict

__all__ = ["ApprovalPolicy", "Gate", "Verdict", "decide"]
