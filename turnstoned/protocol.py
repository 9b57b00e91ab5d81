"""turnstoned protocol v1: every wire type and the one METHODS table.

JSON-RPC 2.0 over stdio with LSP framing. Field names are camelCase on the
wire. New fields get defaults; existing fields never change type. The JSON
Schema under ``schema/`` and ``docs/protocol.md`` are derived from this module
(``python -m turnstoned.schema`` regenerates the schema; a test fails on drift).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal

import msgspec

PROTOCOL_VERSION = 1
# Additions within version 1 (new fields with defaults, new methods); clients may
# compare it to use what a daemon has: "1.1" adds fileChange, per-call approval
# decisions, session/usage and trust for project MCP configs; "1.2" adds previews
# (preview/open, preview/read); "1.3" adds watches (watch/list, watch/cancel), task
# agents' parentCallId and coordinators' children (parentSessionId); "1.4" adds context
# compaction (session/compact, session/compacted, ``detail`` on notice items); "1.5"
# adds intent verdicts, the judge, smart approvals, tool policies, readable grants and edited
# arguments; "1.6" adds daemon/health's model probe (``probe``, ``modelReachable``); "1.7"
# adds several clients of a resident daemon (session/unsubscribe, clients and resident in
# daemon/health); "1.8" adds ``usage`` to session/compacted; "1.9" adds approval modes
# (``approvalMode`` on session/start and session info, session/setMode,
# session/modeChanged), the command sandbox (``sandbox`` on tool-call and approval items,
# ``escalation`` on approval items, ``sandbox`` in daemon/health); "1.10" adds checkpoints
# and undo (``checkpoint`` on turn/completed, turn/changes, turn/undo, turn/redo,
# session/fork, the ``undo`` and ``redo`` notices); "1.11" adds the project instructions
# the model reads (``instructions`` on session/start and session/resume results); "1.12"
# adds the editor: ``editor`` on turn/start, the editor services a client declares at
# initialize (``initializationOptions.turnstoned.editor``) and the editor/* requests that
# ask it, and workspace/filesChanged; ``turnId`` on userMessage items, ``undoneBy`` on
# turn/changes; "1.13" adds model/list, model/use and session/setModel, workspace/findFiles
# and ``mention`` and ``image`` input items (``images`` on userMessage items),
# session/commands, the update_plan tool and plan/updated, session/delete and ``cwd`` on
# session/list, mcpServer/elicit; "1.14" adds OAuth for HTTP MCP servers (``needsAuth``
# and ``loggedIn`` on server info, mcpServer/login, mcpServer/logout, mcpServer/authorize),
# the server's log messages and resource updates; "1.15" adds what a client joining a
# session mid-turn missed (``running`` on session/resume) and session/input (a prompt
# another client sent), and ``webSearch`` in daemon/health.
PROTOCOL_REVISION = "1.15"


class Wire(msgspec.Struct, rename="camel", kw_only=True):
    """Base of every wire type."""


class Event(Wire, kw_only=True):
    """The params of one daemon->client method; ``method`` is set from the METHODS table."""

    method: ClassVar[str] = ""


# ---------------------------------------------------------------- errors


class ErrorCode(enum.IntEnum):
    """JSON-RPC error codes; ``data.kind`` carries the stable name."""

    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    SERVER_NOT_INITIALIZED = -32002
    REQUEST_CANCELLED = -32800
    SESSION_NOT_FOUND = -32010
    SESSION_CLOSED = -32011
    TURN_NOT_FOUND = -32012
    MCP_SERVER_NOT_FOUND = -32013
    CONFIG_ERROR = -32014
    FILE_CHANGE_NOT_PENDING = -32020
    PREVIEW_NOT_FOUND = -32021
    WATCH_NOT_FOUND = -32022
    GRANT_NOT_FOUND = -32023
    CHECKPOINT_NOT_FOUND = -32024
    TURN_RUNNING = -32025
    MCP_LOGIN_FAILED = -32026


ERROR_KINDS: dict[ErrorCode, str] = {
    ErrorCode.PARSE_ERROR: "parseError",
    ErrorCode.INVALID_REQUEST: "invalidRequest",
    ErrorCode.METHOD_NOT_FOUND: "methodNotFound",
    ErrorCode.INVALID_PARAMS: "invalidParams",
    ErrorCode.INTERNAL_ERROR: "internal",
    ErrorCode.SERVER_NOT_INITIALIZED: "serverNotInitialized",
    ErrorCode.REQUEST_CANCELLED: "requestCancelled",
    ErrorCode.SESSION_NOT_FOUND: "sessionNotFound",
    ErrorCode.SESSION_CLOSED: "sessionClosed",
    ErrorCode.TURN_NOT_FOUND: "turnNotFound",
    ErrorCode.MCP_SERVER_NOT_FOUND: "mcpServerNotFound",
    ErrorCode.CONFIG_ERROR: "configError",
    ErrorCode.FILE_CHANGE_NOT_PENDING: "fileChangeNotPending",
    ErrorCode.PREVIEW_NOT_FOUND: "previewNotFound",
    ErrorCode.WATCH_NOT_FOUND: "watchNotFound",
    ErrorCode.GRANT_NOT_FOUND: "grantNotFound",
    ErrorCode.CHECKPOINT_NOT_FOUND: "checkpointNotFound",
    ErrorCode.TURN_RUNNING: "turnRunning",
    ErrorCode.MCP_LOGIN_FAILED: "mcpLoginFailed",
}

TurnErrorKind = Literal[
    "notConfigured",
    "contextWindowExceeded",
    "rateLimited",
    "unauthorized",
    "badRequest",
    "upstreamUnavailable",
    "turnLimit",
    "interrupted",
    "internal",
]

# ---------------------------------------------------------------- shared pieces

SessionKind = Literal["interactive", "coordinator"]
ToolStatus = Literal["pending", "running", "completed", "failed", "declined", "cancelled"]
EffectStatus = Literal["none", "unknown", "partial", "rolled_back"]
Decision = Literal["approve", "deny", "always"]
# How an approval cycle ended: an answer, or the daemon deciding without asking.
ResolvedDecision = Literal["approve", "deny", "always", "cancelled", "timeout", "auto"]
TurnStatus = Literal["completed", "interrupted", "failed"]
SessionStatus = Literal["idle", "running", "closed"]
FileChangeKind = Literal["create", "modify", "delete"]
Risk = Literal["low", "medium", "high", "critical"]
# What runs without asking: reads only; reads, edits in the workspace and sandboxed commands
# (the default); everything but destructive, credential and outside-the-workspace calls,
# without a sandbox; or reads only while the model prepares a plan for the user to approve.
ApprovalMode = Literal["read-only", "auto", "full-access", "plan"]
# How a command ran: inside the OS sandbox, outside it (no sandbox, or the mode has none),
# or outside it because the user approved the model's request to leave it.
SandboxUse = Literal["sandboxed", "unsandboxed", "escalated"]
Recommendation = Literal["approve", "review", "deny"]
# Who judged: the rule table, the LLM judge, or the judge failing (no answer, a timeout,
# an answer that could not be read: it then recommends review).
VerdictTier = Literal["heuristic", "llm", "llm_fallback"]
PolicyAction = Literal["allow", "deny", "ask"]
# What made the daemon compact a session's context, and what replaced the older part.
CompactionTrigger = Literal["auto", "overflow", "manual"]
CompactionMode = Literal["summary", "dropped"]


class TextInput(Wire, kw_only=True, tag="text", tag_field="type"):
    text: str


class MentionInput(Wire, kw_only=True, tag="mention", tag_field="type"):
    """A file (or a line range of it, lines from 1, or a folder) the prompt names with @:
    the model reads its text (a folder: its listing) with the prompt."""

    path: str  # absolute, or relative to the session's cwd
    start_line: int | None = None
    end_line: int | None = None


class ImageInput(Wire, kw_only=True, tag="image", tag_field="type"):
    """A picture for a model that takes images: its bytes (base64 ``data`` with its
    ``mimeType``) or a ``path`` (absolute, or relative to the session's cwd). At most
    4 MB; a model without vision refuses it (``invalidParams``)."""

    data: str | None = None
    mime_type: str | None = None
    path: str | None = None


InputItem = TextInput | MentionInput | ImageInput


class ImageData(Wire, kw_only=True):
    mime_type: str
    data: str  # base64


class Usage(Wire, kw_only=True):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


class TurnError(Wire, kw_only=True):
    kind: TurnErrorKind
    message: str


class FileChange(Wire, kw_only=True):
    """The change a ``write_file``/``edit_file`` call proposes, for an editor's diff view.

    ``unifiedDiff`` is capped; ``truncated`` says it was cut (or could not be made: a
    binary or very large file), and ``fileChange/read`` has the whole content.
    """

    path: str
    kind: FileChangeKind
    unified_diff: str
    truncated: bool = False


class Verdict(Wire, kw_only=True):
    """How risky a tool call looks, and what to do about it. ``rule`` names the rule of
    the rule table that matched (``default`` when none did; ``judge`` for the LLM)."""

    risk: Risk
    recommendation: Recommendation
    rule: str
    reason: str
    tier: VerdictTier = "heuristic"
    confidence: float = 0.5


# ---------------------------------------------------------------- items


class UserMessageItem(Wire, kw_only=True, tag="userMessage", tag_field="type"):
    id: str
    text: str
    images: list[ImageData] = []  # pictures sent with it
    # The turn this message started (session/resume; null: queued, or from before 1.12).
    turn_id: str | None = None
    # Accepted while a turn ran and not read by the model yet: it leads the next turn's message.
    queued: bool = False


class AgentMessageItem(Wire, kw_only=True, tag="agentMessage", tag_field="type"):
    id: str
    text: str = ""


class ReasoningItem(Wire, kw_only=True, tag="reasoning", tag_field="type"):
    id: str
    text: str = ""


class ToolCallItem(Wire, kw_only=True, tag="toolCall", tag_field="type"):
    id: str
    call_id: str
    tool: str
    arguments: str = "{}"
    header: str = ""
    preview: str = ""
    needs_approval: bool
    status: ToolStatus
    output: str | None = None
    is_error: bool
    effect_status: EffectStatus | None = None
    file_change: FileChange | None = None
    # For a call that was gated: the rule table's verdict and the judge's (when it ran).
    verdict: Verdict | None = None
    judge_verdict: Verdict | None = None
    # It ran without asking the user: why (a policy, a grant, smart approval, ...).
    auto_approved: bool = False
    auto_approve_reason: str | None = None
    # The user edited the call in the approval: what the model asked for (``arguments``
    # is what ran).
    original_arguments: str | None = None
    # For commands (bash, watch): how it ran with respect to the sandbox.
    sandbox: SandboxUse | None = None


class NoticeItem(Wire, kw_only=True, tag="notice", tag_field="type"):
    """Something the daemon told the model between turns (e.g. a background shell exited)."""

    id: str
    kind: str
    text: str
    # More to show on demand (for ``compacted``: the summary the model reads instead).
    detail: str | None = None


Item = UserMessageItem | AgentMessageItem | ReasoningItem | ToolCallItem | NoticeItem

# ---------------------------------------------------------------- requests


class Empty(Wire, kw_only=True):
    pass


class SessionStartParams(Wire, kw_only=True):
    cwd: str | None = None
    kind: SessionKind = "interactive"
    model: str | None = None
    skip_permissions: bool = False
    title: str | None = None
    workspace: str | None = None
    # null: the daemon's default ([approvals] mode, "auto" unless configured).
    approval_mode: ApprovalMode | None = None


class InstructionFile(Wire, kw_only=True):
    """A project instruction file the session's model reads (AGENTS.md and the like):
    ``chars`` of it, all unless ``truncated`` (the instructions are capped)."""

    path: str  # absolute
    chars: int
    truncated: bool = False


class SessionStartResult(Wire, kw_only=True):
    session_id: str
    # The project instructions the model reads, most general first.
    instructions: list[InstructionFile] = []


class SessionInfo(Wire, kw_only=True):
    session_id: str
    title: str | None = None
    cwd: str
    kind: SessionKind
    model: str | None = None
    created_at: str
    updated_at: str
    status: SessionStatus
    # The coordinator session that spawned this one (its tools manage it); null otherwise.
    parent_session_id: str | None = None
    approval_mode: ApprovalMode = "auto"


class SessionListParams(Wire, kw_only=True):
    """``cwd``: only the sessions working in this folder (absolute) or below it."""

    cwd: str | None = None


class SessionListResult(Wire, kw_only=True):
    sessions: list[SessionInfo]


class SessionRef(Wire, kw_only=True):
    session_id: str


class ReplayedEvent(Wire, kw_only=True):
    """A notification as it was sent: apply it as if it arrived now."""

    method: str
    params: dict[str, Any]


class RunningTurn(Wire, kw_only=True):
    """The turn running as a client joins: every notification it sent so far, in order
    (its session/input and turn/started first; consecutive deltas of one item joined)."""

    turn_id: str
    events: list[ReplayedEvent]


class SessionResumeResult(Wire, kw_only=True):
    """``items``: the conversation up to the running turn, if one runs; ``running`` then
    replays that turn so far, and the live notifications follow."""

    session_id: str
    session: SessionInfo
    items: list[Item]
    instructions: list[InstructionFile] = []
    plan: list[PlanStep] = []  # the model's last plan (update_plan), if it made one
    running: RunningTurn | None = None


class ModelOption(Wire, kw_only=True):
    """A model the daemon can use: one the configured server lists, or one a local server
    on this machine serves (found when no model is configured)."""

    name: str
    base_url: str
    server: str  # "configured", or the local server's kind (Ollama, llama.cpp, ...)
    current: bool = False  # the configured model
    context_window: int | None = None  # tokens, where known


class ModelListResult(Wire, kw_only=True):
    """``configured`` false: no model is set up; ``models`` then lists what local servers
    serve (offer them). ``error``: the configured server could not be asked."""

    models: list[ModelOption]
    configured: bool
    current: str | None = None
    error: str | None = None


class ModelUseParams(Wire, kw_only=True):
    """Make ``name`` (on ``baseUrl``, when given) the model new sessions use; ``save``
    writes it to the [model] section of the user's config.toml."""

    name: str
    base_url: str | None = None
    save: bool = True


class ModelUseResult(Wire, kw_only=True):
    model: str
    base_url: str | None = None
    saved_to: str | None = None  # the config file written (null: this daemon run only)


class SessionSetModelParams(Wire, kw_only=True):
    session_id: str
    model: str


class SessionSetModelResult(Wire, kw_only=True):
    model: str
    previous: str | None = None


class CommandArgument(Wire, kw_only=True):
    name: str
    description: str = ""
    required: bool = False
    choices: list[str] = []


CommandKind = Literal["builtin", "skill", "prompt"]


class SessionCommand(Wire, kw_only=True):
    """A slash command: ``builtin`` ones a client runs with ``request`` (its own UI for
    ``new`` and ``clear``); a ``skill`` or an MCP ``prompt`` runs by sending ``/name`` and
    its words as a prompt (the daemon loads the skill, then the model follows it)."""

    name: str
    description: str
    kind: CommandKind
    arguments: list[CommandArgument] = []
    request: str | None = None  # the method a builtin calls (null: the client's own action)


class SessionCommandsParams(Wire, kw_only=True):
    """A session's commands; without one, those a new session in ``root`` (absolute) would
    have (the built-ins and the skills there), so a client can list them before it starts."""

    session_id: str | None = None
    root: str | None = None


class SessionCommandsResult(Wire, kw_only=True):
    commands: list[SessionCommand]


class FindFilesParams(Wire, kw_only=True):
    """Files whose paths match ``query`` fuzzily, best first: under the session's cwd, or
    under ``root`` (absolute) without a session."""

    query: str
    session_id: str | None = None
    root: str | None = None
    limit: int = 50


class FoundFile(Wire, kw_only=True):
    path: str  # relative to the result's root
    positions: list[int] = []  # the matched characters of ``path`` (to highlight)


class FindFilesResult(Wire, kw_only=True):
    root: str
    indexed: int  # files in the index (the .gitignore'd and build folders left out)
    files: list[FoundFile]


class SessionSetModeParams(Wire, kw_only=True):
    session_id: str
    mode: ApprovalMode


class SessionSetModeResult(Wire, kw_only=True):
    mode: ApprovalMode
    previous: ApprovalMode


class SessionCompactResult(Wire, kw_only=True):
    """``compacted`` (``session/compacted`` was sent), ``scheduled`` (a turn is running: it
    compacts at its next seam) or ``unchanged`` (nothing old enough to compact)."""

    status: Literal["compacted", "scheduled", "unchanged"]
    text: str = ""


class TurnRef(Wire, kw_only=True):
    session_id: str
    turn_id: str


class TurnChangesResult(Wire, kw_only=True):
    """Every file the turn changed, with its diff (a running turn: so far)."""

    files: list[ChangedFile]
    undoable: bool = True
    note: str | None = None
    # The undo that took this turn back (turn/redo with it brings it back); null: not undone.
    undone_by: str | None = None


# How to settle a file the user changed after the agent did: keep the user's version, or
# take the checkpoint's.
Resolution = Literal["mine", "checkpoint"]


class TurnUndoParams(Wire, kw_only=True):
    session_id: str
    # null: the session's last turn that can still be undone (again: the one before it).
    turn_id: str | None = None
    # Take the turns out of the conversation too (the model forgets them); otherwise the
    # model is told at its next turn that the user undid them.
    rewind: bool = False
    # Only these files (absolute paths) of the turns' changes; all of them when absent.
    paths: list[str] | None = None
    resolutions: dict[str, Resolution] = {}


class TurnRedoParams(Wire, kw_only=True):
    session_id: str
    # null: the session's latest undo that was not redone.
    undo_id: str | None = None
    resolutions: dict[str, Resolution] = {}


class UndoConflict(Wire, kw_only=True):
    """A file the user changed after the agent's turn did: ``diff`` goes from the agent's
    version to the file as it is now."""

    path: str
    diff: str
    truncated: bool = False


class TurnUndoResult(Wire, kw_only=True):
    """``applied`` false: nothing changed, because some files need a resolution
    (``conflicts``: ask the user, then send the call again with ``resolutions``).
    Otherwise ``restored`` were put back, ``kept`` were left as the user has them, and
    ``undoId`` names the undo for turn/redo."""

    applied: bool
    undo_id: str | None = None
    turn_ids: list[str] = []
    restored: list[ChangedFile] = []
    kept: list[str] = []
    conflicts: list[UndoConflict] = []
    rewound: bool = False
    # The text of the undone turn's prompt (turn/undo with rewind: to edit and send again).
    prompt: str | None = None


class SessionForkParams(Wire, kw_only=True):
    """A new session whose conversation is ``sessionId``'s before ``turnId`` (the turn and
    those after it are left out); ``restoreFiles`` also undoes them in the workspace."""

    session_id: str
    turn_id: str
    restore_files: bool = False
    resolutions: dict[str, Resolution] = {}
    title: str | None = None


class SessionForkResult(Wire, kw_only=True):
    """``session`` is null when ``undo`` was not applied (conflicts to resolve first)."""

    session: SessionInfo | None = None
    prompt: str | None = None
    undo: TurnUndoResult | None = None


class EditorRange(Wire, kw_only=True):
    """A range in a file: lines and characters counted from 0, as LSP counts them."""

    start_line: int
    start_character: int = 0
    end_line: int
    end_character: int = 0


DiagnosticSeverity = Literal["error", "warning", "information", "hint"]


class EditorDiagnostic(Wire, kw_only=True):
    """A problem the editor shows (from its language servers, linters, ...)."""

    path: str  # absolute
    range: EditorRange
    severity: DiagnosticSeverity = "error"
    message: str
    source: str | None = None
    code: str | None = None


class EditorSelection(Wire, kw_only=True):
    range: EditorRange
    text: str = ""  # the selected text (the daemon shows the model at most 8,000 chars)


class EditorState(Wire, kw_only=True):
    """What the user has in front of them as they send a prompt: the model reads it, marked
    as editor state, with that prompt."""

    active_file: str | None = None  # absolute
    language_id: str | None = None
    selection: EditorSelection | None = None
    visible: EditorRange | None = None
    modified: bool = False  # the active file has unsaved changes
    diagnostics: list[EditorDiagnostic] = []  # the active file's (at most 50 are shown)


class TurnStartParams(Wire, kw_only=True):
    session_id: str
    input: list[InputItem]
    editor: EditorState | None = None


class TurnStartResult(Wire, kw_only=True):
    turn_id: str
    queued: bool = False


class TurnInterruptParams(Wire, kw_only=True):
    session_id: str
    turn_id: str | None = None
    force: bool = False


class ToolListParams(Wire, kw_only=True):
    session_id: str | None = None


class ToolInfo(Wire, kw_only=True):
    name: str
    description: str
    source: Literal["builtin", "mcp"]
    server: str | None = None
    auto_approve: bool


class ToolListResult(Wire, kw_only=True):
    tools: list[ToolInfo]


class McpServerInfo(Wire, kw_only=True):
    """``untrusted``: from a project's ``.mcp.json`` the user has not trusted (nothing runs)."""

    name: str
    status: Literal["connecting", "connected", "failed", "disabled", "untrusted"]
    tools: int = 0
    resources: int = 0
    prompts: int = 0
    error: str | None = None
    origin: str | None = None
    # An HTTP server asks for a login (mcpServer/login opens the browser); OAuth tokens for
    # it are stored (mcpServer/logout forgets them).
    needs_auth: bool = False
    logged_in: bool = False


class McpServerStatusChanged(McpServerInfo, Event, kw_only=True):
    """An MCP server's new state (the same fields as ``McpServerInfo``)."""


class McpServerListResult(Wire, kw_only=True):
    servers: list[McpServerInfo]


class McpServerRefreshParams(Wire, kw_only=True):
    name: str | None = None


class McpServerLoginParams(Wire, kw_only=True):
    name: str


class McpServerLoginResult(Wire, kw_only=True):
    """The server's state after the login (connected) or the logout."""

    server: McpServerInfo


class McpChange(Wire, kw_only=True):
    server: str
    added: list[str] = []
    removed: list[str] = []
    error: str | None = None


class McpServerRefreshResult(Wire, kw_only=True):
    changes: list[McpChange]


class McpServerTrustParams(Wire, kw_only=True):
    """Name the project by its folder (``workspace``) or its ``.mcp.json`` (``configPath``).

    ``hash``, when given, must be the content hash the user saw; a file changed
    since then is refused.
    """

    workspace: str | None = None
    config_path: str | None = None
    trusted: bool
    hash: str | None = None


class McpServerTrustResult(Wire, kw_only=True):
    workspace: str
    config_path: str
    hash: str
    trusted: bool
    servers: list[McpServerInfo] = []


class McpHealth(Wire, kw_only=True):
    servers: int = 0
    connected: int = 0
    tools: int = 0
    resources: int = 0
    prompts: int = 0


class DaemonHealthParams(Wire, kw_only=True):
    """``probe``: also ask the model server for its models (bounded: a few seconds)."""

    probe: bool = False


class SandboxHealth(Wire, kw_only=True):
    """The OS sandbox for commands: whether this machine has one, and what it enforces (or
    why there is none: then commands ask as they did before approval modes)."""

    available: bool
    detail: str = ""


class DaemonHealthResult(Wire, kw_only=True):
    """``modelReachable`` (with ``probe``): the model server answered ``/models`` (true, though
    ``modelError`` may say it answered with an error), could not be reached (false), or was
    not asked (null: no probe, or no model configured)."""

    version: str
    protocol_version: int
    protocol_revision: str = PROTOCOL_REVISION
    sessions: int
    running_turns: int = 0
    model: str | None = None
    config_error: str | None = None
    mcp: McpHealth
    model_url: str | None = None
    model_reachable: bool | None = None
    model_error: str | None = None
    # Connections the daemon is serving (more than one only for `turnstoned serve`).
    clients: int = 1
    # The daemon outlives its clients: `turnstoned serve`, reached through `turnstoned attach`.
    resident: bool = False
    sandbox: SandboxHealth | None = None
    # What web_search uses: "searxng at URL", "MCP server:tool (automatic)", or "none: ..."
    # with the ways to get one.
    web_search: str | None = None


MemoryScope = Literal["global", "workstream", "user", "coordinator", "project"]
MemoryType = Literal["user", "general", "feedback", "reference"]
SkillRisk = Literal["low", "medium", "high", "critical"]
SkillOrigin = Literal["workspace", "user", "mcp"]


class MemoryListParams(Wire, kw_only=True):
    """Without ``sessionId``: the global, user and coordinator scopes; with it: every scope
    that session sees (its workstream and project included)."""

    scope: MemoryScope | None = None
    session_id: str | None = None


class MemoryInfo(Wire, kw_only=True):
    name: str
    scope: MemoryScope
    type: MemoryType
    description: str
    content: str
    updated_at: str


class MemoryListResult(Wire, kw_only=True):
    memories: list[MemoryInfo]


class MemoryDeleteParams(Wire, kw_only=True):
    """``workstream`` and ``project`` memories need the ``sessionId`` they belong to."""

    name: str
    scope: MemoryScope
    session_id: str | None = None


class MemoryDeleteResult(Wire, kw_only=True):
    deleted: bool


class SkillListParams(Wire, kw_only=True):
    session_id: str | None = None


class SkillInfo(Wire, kw_only=True):
    name: str
    description: str
    category: str = ""
    risk: SkillRisk
    origin: SkillOrigin
    active: bool = False


class SkillListResult(Wire, kw_only=True):
    skills: list[SkillInfo]


class FileChangeReadParams(Wire, kw_only=True):
    session_id: str
    call_id: str


class FileChangeReadResult(Wire, kw_only=True):
    """The whole file before and after the proposed change (``oldText`` is "" for a new file)."""

    path: str
    old_text: str
    new_text: str
class GrantListParams(Wire, kw_only=True):
    session_id: str


class GrantInfo(Wire, kw_only=True):
    """A standing grant: ``rule`` as saved (``bash:git status``, ``bash:@read-only``,
    ``write@workspace``, a label), what it lets run, and where it comes from."""

    rule: str
    description: str
    source: Literal["session", "config"]  # "always" answers, or [tools] auto_approve_tools
    revocable: bool


class GrantListResult(Wire, kw_only=True):
    grants: list[GrantInfo]


class GrantRevokeParams(Wire, kw_only=True):
    session_id: str
    rule: str


class GrantRevokeResult(Wire, kw_only=True):
    revoked: bool


class PolicyInfo(Wire, kw_only=True):
    """One tool policy and whether it applies (``active``; ``note`` says why not)."""

    action: PolicyAction
    label: str = "*"
    command: str | None = None
    path: str | None = None
    priority: int = 0
    reason: str = ""
    source: Literal["config", "workspace"]
    origin: str  # the file it is written in
    index: int  # its place in that file (1-based)
    active: bool = True
    note: str = ""


class PolicyFileInfo(Wire, kw_only=True):
    """A workspace's policies file: its content hash and the user's decision about it."""

    path: str
    hash: str
    decision: Literal["trusted", "denied"] | None = None
    problem: str | None = None  # it could not be read: none of its policies apply


class PolicyListParams(Wire, kw_only=True):
    session_id: str


class PolicyListResult(Wire, kw_only=True):
    """The policies that apply to a session, in the order they are tried."""

    policies: list[PolicyInfo]
    workspace_file: PolicyFileInfo | None = None


class PolicyTrustParams(Wire, kw_only=True):
    """Name the project by its folder (``workspace``) or its file (``configPath``);
    ``hash``, when given, must be the content the user saw."""

    workspace: str | None = None
    config_path: str | None = None
    trusted: bool
    hash: str | None = None


class PolicyTrustResult(Wire, kw_only=True):
    workspace: str
    config_path: str
    hash: str
    trusted: bool
    policies: list[PolicyInfo] = []


PreviewKind = Literal["web", "pdf", "image", "table", "text", "markdown"]


class PreviewReadParams(Wire, kw_only=True):
    """Read a preview's bytes: all of them, or ``length`` bytes from ``offset``."""

    session_id: str
    preview_id: str
    offset: Annotated[int, msgspec.Meta(ge=0)] = 0
    length: Annotated[int, msgspec.Meta(ge=0)] | None = None


class PreviewReadResult(Wire, kw_only=True):
    preview_id: str
    kind: PreviewKind
    title: str
    source: str
    content_type: str
    size: int  # of the whole preview, in bytes
    offset: int = 0
    data: str  # base64 of the bytes read
    eof: bool  # the bytes read reach the end


class WatchInfo(Wire, kw_only=True):
    """A command the daemon polls for a session (the model's ``watch`` tool)."""

    watch_id: str
    session_id: str
    name: str
    command: str
    interval_seconds: float
    # The condition that ends the watch; null: it fires when the output changes.
    stop_on: str | None = None
    max_polls: int
    poll_count: int = 0
    active: bool = True
    # Why an inactive watch ended ("condition met: ...", "cancelled by the user", ...).
    ended: str | None = None
    next_poll_at: str | None = None
    last_poll_at: str | None = None
    last_exit_code: int | None = None
    created_at: str


class WatchListParams(Wire, kw_only=True):
    """Without ``sessionId``: the active watches of every session."""

    session_id: str | None = None


class WatchListResult(Wire, kw_only=True):
    watches: list[WatchInfo]


class WatchCancelParams(Wire, kw_only=True):
    """``name`` is the watch's name or a prefix (4 or more characters) of its id."""

    session_id: str
    name: str


class WatchCancelResult(Wire, kw_only=True):
    watch: WatchInfo
    # False when the watch had already ended (``watch.ended`` says why).
    cancelled: bool


# ---------------------------------------------------------------- notifications


class SessionInput(Event, kw_only=True):
    """Another client sent the session a prompt (sent to every follower but the sender):
    ``turnId`` is the turn it starts, null when it waits for the running one (``queued``
    on the item)."""

    session_id: str
    item: UserMessageItem
    turn_id: str | None = None


class TurnStarted(Event, kw_only=True):
    session_id: str
    turn_id: str


class ItemStarted(Event, kw_only=True):
    session_id: str
    turn_id: str
    item_id: str
    item: Item
    # Set on the items of a task agent: the ``task_agent`` call they belong to.
    parent_call_id: str | None = None


class ItemDelta(Event, kw_only=True):
    session_id: str
    turn_id: str
    item_id: str
    delta: str
    parent_call_id: str | None = None


class AgentMessageDelta(ItemDelta, kw_only=True):
    """Text of an ``agentMessage`` item."""


class ReasoningDelta(ItemDelta, kw_only=True):
    """Text of a ``reasoning`` item."""


class ToolOutputDelta(Event, kw_only=True):
    session_id: str
    turn_id: str
    item_id: str
    call_id: str
    chunk: str
    parent_call_id: str | None = None


class ItemCompleted(Event, kw_only=True):
    session_id: str
    turn_id: str
    item_id: str
    item: Item
    parent_call_id: str | None = None


class ApprovalResolved(Event, kw_only=True):
    session_id: str
    turn_id: str
    cycle_id: str
    call_ids: list[str]
    decision: ResolvedDecision
    # When the answer decided calls one by one: what each asked-about call got.
    calls: dict[str, Decision] = {}
    parent_call_id: str | None = None


class ApprovalVerdicts(Event, kw_only=True):
    """The LLM judge's verdicts for a cycle that was sent with ``judgePending``."""

    session_id: str
    turn_id: str
    cycle_id: str
    verdicts: dict[str, Verdict]
    parent_call_id: str | None = None  # the cycle of a task agent: see ApprovalResolved


class ChangedFile(Wire, kw_only=True):
    """A file a turn changed (or an undo would restore), by whoever changed it: a file tool,
    a command, the user while the turn ran. ``path`` is absolute. ``diff`` (turn/changes
    only) is the unified diff, capped (``truncated``); none for a binary file."""

    path: str
    kind: FileChangeKind
    binary: bool = False
    diff: str | None = None
    truncated: bool = False


class TurnCheckpoint(Wire, kw_only=True):
    """What a turn changed in the workspace, and whether turn/undo can take it back.

    ``undoable`` is false when the workspace could not be snapshotted before the turn
    changed it (``note`` says why: too big, git missing)."""

    files: list[ChangedFile] = []
    undoable: bool = True
    note: str | None = None


class TurnCompleted(Event, kw_only=True):
    session_id: str
    turn_id: str
    status: TurnStatus
    error: TurnError | None = None
    usage: Usage | None = None
    # Set when the turn ran a call that may change the workspace.
    checkpoint: TurnCheckpoint | None = None


class SessionUsage(Event, kw_only=True):
    """How full the session's context is after a model call (prompt plus reply, in tokens)."""

    session_id: str
    context_tokens: int
    context_window: int
    # True when the server reported no usage and ``contextTokens`` is estimated from text.
    estimated: bool = False


class SessionCompacted(Event, kw_only=True):
    """The older part of the conversation left the model's view for a summary (or, when the
    summary could not be written, a note that it was dropped); history and recall keep it."""

    session_id: str
    turn_id: str | None = None  # null when compacted between turns (session/compact)
    trigger: CompactionTrigger
    mode: CompactionMode
    messages: int  # how many messages the model no longer sees word for word
    context_tokens_before: int
    context_tokens_after: int
    context_window: int
    text: str  # one line for the user
    summary: str = ""  # what the model reads instead ("" when mode is "dropped")
    # The tokens the summary cost, as the server reported them (null when it reported none or
    # no call was made); within a turn they count in its turn/completed usage too.
    usage: Usage | None = None


class SessionNotice(Event, kw_only=True):
    """A session-level event outside any turn (e.g. a background shell exited)."""

    session_id: str
    kind: str
    text: str
    data: dict[str, Any] = {}


PlanStatus = Literal["pending", "in_progress", "done"]


class PlanStep(Wire, kw_only=True):
    step: str
    status: PlanStatus = "pending"


class PlanUpdated(Event, kw_only=True):
    """The model's plan for the work under way (``update_plan``): the whole list each time."""

    session_id: str
    turn_id: str | None = None
    steps: list[PlanStep]
    explanation: str | None = None


class SessionModeChanged(Event, kw_only=True):
    """A session's approval mode changed (session/setMode, or the user approved a plan)."""

    session_id: str
    mode: ApprovalMode
    previous: ApprovalMode


class CancelParams(Event, kw_only=True):
    """The id of a request that is withdrawn (LSP's ``$/cancelRequest``)."""

    id: int | str


class ShowMessageParams(Event, kw_only=True):
    """LSP's ``window/showMessage``: 1 error, 2 warning, 3 info, 4 log."""

    type: int
    message: str


# ---------------------------------------------------------------- the LSP lifecycle


class ClientInfo(Wire, kw_only=True):
    name: str
    version: str | None = None


class EditorCapabilities(Wire, kw_only=True):
    """What an editor serves the daemon (its ``editor/*`` requests); each adds tools for the
    model or makes tools read what the user sees."""

    diagnostics: bool = False  # editor/diagnostics: the editor_diagnostics tool
    open_files: bool = False  # editor/openFiles: the editor_open_files tool
    symbols: bool = False  # editor/symbol: the editor_symbol tool (definition, references)
    buffers: bool = False  # editor/buffers: tools read and edit unsaved buffer text


class ClientOptions(Wire, kw_only=True):
    editor: EditorCapabilities | None = None


class InitializationOptions(Wire, kw_only=True):
    turnstoned: ClientOptions | None = None


class InitializeParams(Wire, kw_only=True):
    """LSP's ``initialize`` params. Sessions get their directories from ``session/start``;
    ``initializationOptions.turnstoned.editor`` says what the editor serves. Other LSP
    fields are accepted and ignored."""

    process_id: int | None = None
    client_info: ClientInfo | None = None
    capabilities: dict[str, Any] = {}
    initialization_options: InitializationOptions | None = None


class TextDocumentSync(Wire, kw_only=True):
    open_close: bool = False
    change: int = 0


class TurnstonedCapabilities(Wire, kw_only=True):
    protocol_version: int
    protocol_revision: str
    methods: list[str]


class ExperimentalCapabilities(Wire, kw_only=True):
    turnstoned: TurnstonedCapabilities


class ServerCapabilities(Wire, kw_only=True):
    """Document sync is off and no LSP language feature is offered."""

    text_document_sync: TextDocumentSync = msgspec.field(default_factory=TextDocumentSync)
    experimental: ExperimentalCapabilities


class ServerInfo(Wire, kw_only=True):
    name: str
    version: str


class InitializeResult(Wire, kw_only=True):
    capabilities: ServerCapabilities
    server_info: ServerInfo


class PreviewOpen(Event, kw_only=True):
    """The model opened a preview: show it beside the conversation (bytes via preview/read)."""

    session_id: str
    call_id: str
    preview_id: str  # content address: sha256 of the bytes
    kind: PreviewKind
    title: str
    source: str  # the URL it came from (after redirects), or the file path
    content_type: str
    size: int
    csp: str = ""  # the Content-Security-Policy to render it under ("" for a PDF viewer)


# ---------------------------------------------------------------- daemon -> client requests


class ApprovalRequestItem(Wire, kw_only=True):
    call_id: str
    tool: str
    header: str
    preview: str = ""
    needs_approval: bool
    approval_label: str
    error: str | None = None
    file_change: FileChange | None = None
    verdict: Verdict | None = None
    judge_verdict: Verdict | None = None
    auto_approved: bool = False
    auto_approve_reason: str | None = None
    # The grant rules an "always" for this call saves (empty: it saves none; the call asks
    # every time), exactly as grant/list will show them.
    grant_rules: list[str] = []
    # The tool policy that made this call ask (``ask`` rules), for the user to see.
    policy: str | None = None
    # How the call runs if approved (commands only): in the sandbox, or outside it.
    sandbox: SandboxUse | None = None
    # The model asks to run the command outside the sandbox: what the sandbox stopped (or
    # would stop), and the model's reason.
    escalation: str | None = None


class ApprovalRequestParams(Event, kw_only=True):
    session_id: str
    turn_id: str
    cycle_id: str
    items: list[ApprovalRequestItem]
    # The calls cannot be decided one by one (they change the same file): answer the cycle.
    atomic: bool = False
    # Asked by a task agent: the ``task_agent`` call whose agent wants to run these calls.
    parent_call_id: str | None = None
    # The LLM judge is still rating the calls: approval/verdicts follows.
    judge_pending: bool = False


class CallDecision(Wire, kw_only=True):
    decision: Decision
    feedback: str | None = None
    # The call's arguments as the user edited them: the call is prepared again with these
    # and re-checked (policies, verdict, workspace); it runs only if nothing more is needed.
    # For write_file and edit_file, {path, content} is the file's final text (per-hunk review).
    arguments: dict[str, Any] | None = None


class ApprovalResponse(Wire, kw_only=True):
    """The answer to one cycle; ``calls`` decides single calls, the rest take ``decision``."""

    decision: Decision
    feedback: str | None = None
    calls: dict[str, CallDecision] = {}


class McpServerPreview(Wire, kw_only=True):
    """One server of a project config exactly as written: nothing is expanded.

    ``env`` lists the names the entry sets in the server's environment;
    ``variables`` the names of the user's environment variables its ``${VAR}``
    references would read (their values would reach the server).
    """

    name: str
    transport: Literal["stdio", "http"] | None = None
    command: str | None = None
    args: list[str] = []
    url: str | None = None
    cwd: str | None = None
    env: list[str] = []
    variables: list[str] = []
    problem: str | None = None


class McpTrustRequestParams(Event, kw_only=True):
    workspace: str
    config_path: str
    hash: str
    servers: list[McpServerPreview]
    previously_trusted: bool = False  # another version of this file was trusted before


class PolicyTrustRequestParams(Event, kw_only=True):
    """A workspace's policies file has ``allow`` rules: may they allow (its deny and ask rules
    apply whatever the answer)? The answer is an ``McpTrustResponse``."""

    workspace: str
    config_path: str
    hash: str
    policies: list[PolicyInfo]
    previously_trusted: bool = False


class McpTrustResponse(Wire, kw_only=True):
    """``trust`` and ``deny`` are remembered for this content hash; ``dismiss`` asks again
    at the next session. Anything else (an error, null, an unknown word) trusts nothing."""

    decision: Literal["trust", "deny", "dismiss"]


# ---------------------------------------------------------------- MCP elicitation


class McpElicitParams(Event, kw_only=True):
    """An MCP server asks the user a question while a session's call of one of its tools
    runs: a form for ``requestedSchema`` (a flat JSON Schema object: string, number,
    integer, boolean and enum properties, with defaults and ``required``)."""

    session_id: str
    server: str
    message: str
    requested_schema: dict[str, Any] = {}
    # The properties in the server's order (for clients whose JSON objects lose it).
    property_order: list[str] = []


ElicitAction = Literal["accept", "decline", "cancel"]


class McpElicitResponse(Wire, kw_only=True):
    """``accept`` with ``content`` (the form's values), ``decline`` or ``cancel``."""

    action: ElicitAction
    content: dict[str, Any] | None = None


# ---------------------------------------------------------------- MCP login


class McpAuthorizeParams(Event, kw_only=True):
    """Open ``url`` in the user's browser to log in to MCP server ``server``: during an
    mcpServer/login the client asked for, or (``sessionId`` set) for a tool call the user
    approved when the server asks for more access. The page ends at a loopback address of
    the daemon's machine; the daemon waits up to 5 minutes for it."""

    server: str
    url: str
    session_id: str | None = None


class McpAuthorizeResponse(Wire, kw_only=True):
    """``opened``: the browser was asked to show the page (false: the user was only shown
    the address)."""

    opened: bool


# ---------------------------------------------------------------- the editor's services


class EditorDiagnosticsParams(Event, kw_only=True):
    """``path`` null: every diagnostic the editor knows of in the workspace."""

    session_id: str
    path: str | None = None


class EditorDiagnosticsResult(Wire, kw_only=True):
    diagnostics: list[EditorDiagnostic]


class EditorOpenFilesParams(Event, kw_only=True):
    session_id: str


class OpenFile(Wire, kw_only=True):
    path: str  # absolute
    modified: bool = False
    active: bool = False


class EditorOpenFilesResult(Wire, kw_only=True):
    files: list[OpenFile]


SymbolAction = Literal["definition", "references"]


class EditorSymbolParams(Event, kw_only=True):
    """The definition of, or the references to, the symbol at a position (from 0)."""

    session_id: str
    action: SymbolAction
    path: str
    line: int
    character: int


class EditorLocation(Wire, kw_only=True):
    path: str
    range: EditorRange
    text: str | None = None  # the line there, when the editor has it at hand


class EditorSymbolResult(Wire, kw_only=True):
    locations: list[EditorLocation]


class EditorBuffersParams(Event, kw_only=True):
    session_id: str


class EditorBuffer(Wire, kw_only=True):
    path: str  # absolute
    text: str


class EditorBuffersResult(Wire, kw_only=True):
    """The open buffers with unsaved changes (only those)."""

    buffers: list[EditorBuffer]


class ChangedPath(Wire, kw_only=True):
    path: str  # absolute
    # The change was made to the text of the editor's unsaved buffer: the file now holds
    # that text with the change, so the buffer can be reloaded without losing anything.
    from_buffer: bool = False


class WorkspaceFilesChanged(Event, kw_only=True):
    """Files a tool wrote; ``commands``: a command ran that may have changed any file (check
    every open buffer against the disk)."""

    session_id: str
    files: list[ChangedPath] = []
    commands: bool = False


# ---------------------------------------------------------------- the table


@dataclass(frozen=True, slots=True)
class Method:
    name: str
    direction: Literal["client->daemon", "daemon->client"]
    kind: Literal["request", "notification"]
    params: type | None
    result: type | None
    doc: str
    # Part of the LSP base protocol and lifecycle, served by the LSP layer (pygls)
    # rather than by a turnstoned handler.
    lsp: bool = False


def _req(name: str, params: type | None, result: type | None, doc: str) -> Method:
    return Method(name, "client->daemon", "request", params, result, doc)


def _note(name: str, params: type, doc: str) -> Method:
    return Method(name, "daemon->client", "notification", params, None, doc)


def _lsp(name: str, direction: Literal["client->daemon", "daemon->client"],
         kind: Literal["request", "notification"], params: type | None, result: type | None,
         doc: str) -> Method:
    return Method(name, direction, kind, params, result, doc, lsp=True)


def _bind_events(methods: tuple[Method, ...]) -> None:
    """Each daemon->client params type learns its method; one type per method, checked here."""
    for m in methods:
        if m.direction != "daemon->client":
            continue
        params = m.params
        if params is None or not issubclass(params, Event) or "method" in vars(params):
            raise TypeError(f"{m.name}: params must be an Event type of its own")
        params.method = m.name


METHODS: tuple[Method, ...] = (
    _lsp("initialize", "client->daemon", "request", InitializeParams, InitializeResult,
         "Open the connection; the answer names the protocol version and methods."),
    _lsp("initialized", "client->daemon", "notification", Empty,
         None, "The client is ready; the daemon loads its configuration and engine."),
    _lsp("shutdown", "client->daemon", "request", None, None,
         "Stop running turns, background shells and MCP servers; answers null."),
    _lsp("exit", "client->daemon", "notification", None, None,
         "End the process (exit code 1 without a shutdown first)."),
    _req("session/start", SessionStartParams, SessionStartResult, "Open a new session."),
    _req("session/list", SessionListParams, SessionListResult,
         "Sessions known to the daemon, newest first (those under a folder, with cwd)."),
    _req("session/delete", SessionRef, Empty,
         "Forget a session: its turn stops, its history and checkpoints are deleted."),
    _req("session/resume", SessionRef, SessionResumeResult, "Reopen a session; its history as items."),
    _req("session/close", SessionRef, Empty, "Close a session: its turn and background shells end."),
    _req("session/unsubscribe", SessionRef, Empty,
         "Stop receiving a session's notifications and approval requests on this connection."),
    _req("session/setMode", SessionSetModeParams, SessionSetModeResult,
         "Change a session's approval mode; it applies from the next tool call."),
    _req("session/setModel", SessionSetModelParams, SessionSetModelResult,
         "Change the model of a session (on the configured server); from its next model call."),
    _req("session/commands", SessionCommandsParams, SessionCommandsResult,
         "The slash commands a session offers: built-ins, its skills and MCP prompts."),
    _req("workspace/findFiles", FindFilesParams, FindFilesResult,
         "Fuzzy file search for @-mentions: paths ranked for a few typed letters."),
    _req("model/list", None, ModelListResult,
         "Models to choose from: the configured server's, or local servers' when none is set."),
    _req("model/use", ModelUseParams, ModelUseResult,
         "Make a model the one new sessions use, and save it to config.toml."),
    _req("session/compact", SessionRef, SessionCompactResult,
         "Summarise the older part of a session's context now (a running turn: at its next seam)."),
    _req("turn/start", TurnStartParams, TurnStartResult,
         "Send user input. Returns at once; a turn already running takes it at its next seam."),
    _req("turn/interrupt", TurnInterruptParams, Empty,
         "Stop the running turn. Returns at once; turn/completed `interrupted` follows."),
    _req("turn/changes", TurnRef, TurnChangesResult,
         "Every file a turn changed, with its diff."),
    _req("turn/undo", TurnUndoParams, TurnUndoResult,
         "Put the workspace back as it was before a turn (and the turns after it)."),
    _req("turn/redo", TurnRedoParams, TurnUndoResult, "Bring back what an undo took back."),
    _req("session/fork", SessionForkParams, SessionForkResult,
         "A new session continuing from before one of a session's turns."),
    _req("tool/list", ToolListParams, ToolListResult, "Tools visible to a session (or all)."),
    _req("mcpServer/list", None, McpServerListResult, "Configured MCP servers and their state."),
    _req("mcpServer/refresh", McpServerRefreshParams, McpServerRefreshResult,
         "Rediscover one or all MCP servers (reconnecting dead ones)."),
    _req("mcpServer/trust", McpServerTrustParams, McpServerTrustResult,
         "Trust (start) or revoke a project's .mcp.json servers; answers once they settled."),
    _req("mcpServer/login", McpServerLoginParams, McpServerLoginResult,
         "Log in to an HTTP MCP server (OAuth; the browser opens through mcpServer/authorize); "
         "answers once it connected, or with the reason it did not."),
    _req("mcpServer/logout", McpServerLoginParams, McpServerLoginResult,
         "Forget an MCP server's OAuth tokens; it reconnects without them."),
    _req("daemon/health", DaemonHealthParams, DaemonHealthResult,
         "Version, protocol and load; with `probe`, whether the model server answers."),
    _req("memory/list", MemoryListParams, MemoryListResult,
         "Stored memories, newest update first (to show and prune them)."),
    _req("memory/delete", MemoryDeleteParams, MemoryDeleteResult, "Delete one memory."),
    _req("skill/list", SkillListParams, SkillListResult,
         "Skills a session (or, without one, the user) can load, and which one is active."),
    _req("fileChange/read", FileChangeReadParams, FileChangeReadResult,
         "The whole proposed content of a file change awaiting approval (for a diff view)."),
    _req("preview/read", PreviewReadParams, PreviewReadResult,
         "Read the content of a preview the daemon announced with preview/open."),
    _req("watch/list", WatchListParams, WatchListResult,
         "Active watches (commands the daemon polls for a session), the next due first."),
    _req("watch/cancel", WatchCancelParams, WatchCancelResult, "Stop one of a session's watches."),
    _req("grant/list", GrantListParams, GrantListResult,
         "A session's standing grants: what each lets run unasked."),
    _req("grant/revoke", GrantRevokeParams, GrantRevokeResult,
         "Take back one of a session's grants: its calls ask again."),
    _req("policy/list", PolicyListParams, PolicyListResult,
         "The tool policies that apply to a session, in the order they are tried, and why."),
    _req("policy/trust", PolicyTrustParams, PolicyTrustResult,
         "Trust (let it allow) or revoke a workspace's .turnstone/policies.toml."),
    _note("session/input", SessionInput,
          "Another client sent the session a prompt: show it as the user's message."),
    _note("turn/started", TurnStarted, "A turn began (the model may take a while to answer)."),
    _note("item/started", ItemStarted, "An item (message, reasoning, tool call) began."),
    _note("item/agentMessage/delta", AgentMessageDelta, "Text of the assistant message (coalesced)."),
    _note("item/reasoning/delta", ReasoningDelta, "Reasoning text, when the server sends it."),
    _note("item/toolCall/outputDelta", ToolOutputDelta, "Streamed tool output (bash)."),
    _note("item/completed", ItemCompleted, "The final state of an item; authoritative."),
    _note("approval/resolved", ApprovalResolved, "An approval cycle ended."),
    _note("approval/verdicts", ApprovalVerdicts,
          "The LLM judge's verdicts for a pending approval cycle (judgePending)."),
    _note("turn/completed", TurnCompleted, "The turn ended; authoritative."),
    _note("session/notice", SessionNotice, "A session-level event outside a turn."),
    _note("session/usage", SessionUsage, "How full the session's context is, after each model call."),
    _note("session/compacted", SessionCompacted,
          "Older messages left the model's context for a summary; history and recall keep them."),
    _note("plan/updated", PlanUpdated,
          "The model's plan changed: show it as a checklist (the whole list each time)."),
    _note("session/modeChanged", SessionModeChanged,
          "A session's approval mode changed (set by a client, or a plan was approved)."),
    _note("preview/open", PreviewOpen,
          "Show a preview (web page, PDF, image, table, text, markdown) the model opened."),
    _note("mcpServer/statusChanged", McpServerStatusChanged,
          "An MCP server connected, failed, reconnected or changed its catalog counts."),
    _note("workspace/filesChanged", WorkspaceFilesChanged,
          "Tools changed files: reload unmodified buffers of them, warn about modified ones."),
    _lsp("$/cancelRequest", "daemon->client", "notification", CancelParams, None,
         "A daemon request (an approval, a trust question) is withdrawn: close its dialog; a "
         "late answer is ignored. Clients may send it too, for their own requests."),
    _lsp("window/showMessage", "daemon->client", "notification", ShowMessageParams, None,
         "A message for the user: the configuration cannot be used (sent after initialized)."),
    Method("item/tool/requestApproval", "daemon->client", "request", ApprovalRequestParams,
           ApprovalResponse, "Ask the user to approve one cycle of tool calls."),
    Method("mcpServer/requestTrust", "daemon->client", "request", McpTrustRequestParams,
           McpTrustResponse, "Ask whether the servers of a project's .mcp.json may run."),
    Method("policy/requestTrust", "daemon->client", "request", PolicyTrustRequestParams,
           McpTrustResponse, "Ask whether a workspace's policies file may allow tool calls."),
    Method("mcpServer/elicit", "daemon->client", "request", McpElicitParams, McpElicitResponse,
           "An MCP server asks the user something while its tool runs: show a form."),
    Method("mcpServer/authorize", "daemon->client", "request", McpAuthorizeParams,
           McpAuthorizeResponse, "Open an MCP server's login page in the user's browser."),
    Method("editor/diagnostics", "daemon->client", "request", EditorDiagnosticsParams,
           EditorDiagnosticsResult, "The diagnostics the editor shows for a file or the workspace."),
    Method("editor/openFiles", "daemon->client", "request", EditorOpenFilesParams,
           EditorOpenFilesResult, "The files open in the editor."),
    Method("editor/symbol", "daemon->client", "request", EditorSymbolParams, EditorSymbolResult,
           "Where a symbol is defined, or referenced, as the editor's language servers know."),
    Method("editor/buffers", "daemon->client", "request", EditorBuffersParams,
           EditorBuffersResult, "The text of open buffers with unsaved changes."),
)

METHODS_BY_NAME: dict[str, Method] = {m.name: m for m in METHODS}
_bind_events(METHODS)
