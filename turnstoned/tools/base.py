"""The contract every tool module implements, and the context the pipeline hands it.

A tool is `tools/<name>.json` (what the model sees, plus metadata) and
`tools/<name>.py` with:

- ``Args``: a msgspec Struct decoded from the model's arguments (lenient: strings
  that spell numbers or booleans are accepted; unknown keys are ignored);
- ``prepare(args, ctx) -> PreparedCall``: cheap and free of side effects on the
  outside world. It validates, resolves paths, builds the header and preview and
  decides ``needs_approval``. A problem is returned as ``PreparedCall(error=...)``;
- ``async execute(call, ctx) -> ToolOutput``: the only place with side effects.

Modules whose name starts with ``_`` are helpers, not tools. The pipeline calls
every tool, built-in or not, through a ``ToolHandle``.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from turnstoned.protocol import (
    ApprovalMode,
    EditorCapabilities,
    EffectStatus,
    Event,
    FileChange,
    FileChangeKind,
    McpAuthorizeParams,
    McpElicitParams,
    McpElicitResponse,
    SandboxUse,
    Verdict,
)

if TYPE_CHECKING:
    from turnstoned.config import NotifyConfig
    from turnstoned.mcp.manager import MCPManager
    from turnstoned.net.services import WebServices
    from turnstoned.store import Store
    from turnstoned.store.previews import PreviewRecord, PreviewStore
    from turnstoned.tools.coordination import Coordination

__all__ = ["EffectStatus"]

log = logging.getLogger(__name__)

class EditorUnavailable(Exception):
    """No editor following the session serves this, or it did not answer in time."""


class EditorLink(Protocol):
    """The editor(s) following a session, for what only they know (``editor/*`` requests)."""

    def features(self, session_id: str) -> EditorCapabilities:
        """What an editor following ``session_id`` serves (nothing when none does)."""
        ...

    async def ask(self, params: Event, result: type[Any]) -> Any:
        """Ask an editor following ``params.session_id`` that serves the request; its answer
        as ``result``. Raises EditorUnavailable."""
        ...


# The session's approval mode, in its persisted state (``SessionEnv.persisted``).
MODE_KEY = "approval_mode"

# Which tools an agent sees: an editor's session (interactive or coordinator), or a
# task (a sub-agent running a delegated job; the tools' ``task_agent`` metadata).
AgentKind = Literal["interactive", "coordinator", "task"]


@dataclass(slots=True)
class BatchPolicy:
    """Consistency rules for calls of one group inside one model batch.

    A batch mixing ``read`` and ``write`` members of the same group is refused
    (every member becomes an error carrying ``mixed_access_error``);
    ``serialize`` makes the whole batch run one call at a time in model order.
    """

    group: str
    access: Literal["read", "write"]
    mixed_access_error: str = ""
    serialize: bool = False


@dataclass(slots=True)
class FileProposal:
    """The file change a call proposes: shown with its approval, readable whole while pending."""

    path: str  # absolute, symlinks resolved
    kind: FileChangeKind
    unified_diff: str  # capped; ``truncated`` says when it was cut or could not be made
    truncated: bool
    # The whole (old, new) text, computed only when an editor asks for it.
    texts: Callable[[], tuple[str, str]]


@dataclass(slots=True)
class PreparedCall:
    """One model tool call after phase 1 (prepare)."""

    header: str
    preview: str = ""
    needs_approval: bool = False
    approval_label: str | None = None
    # False: no standing grant ("always", ``auto_approve_tools``) covers this call; it
    # asks every time (a write outside the workspace, a credential path).
    grantable: bool = True
    error: str | None = None
    data: Any = None  # tool-specific state handed from prepare to execute
    policy: BatchPolicy | None = None
    file_change: FileProposal | None = None
    # The result to report when the call is interrupted after it started, for a call that
    # knows better than "outcome unknown" (a task agent: the ledger of its own calls).
    receipt: Callable[[str], ToolOutput] | None = None
    # Filled in by the pipeline:
    call_id: str = ""  # daemon-unique: items, approvals, results and the store use it
    model_id: str = ""  # the id the model gave the call (unique within its reply)
    tool: str = ""
    arguments: str = "{}"  # repaired JSON text, safe to send back to the model
    # Filled in by the approval gate (for calls that needed approval):
    verdict: Verdict | None = None  # the intent rule table's
    findings: tuple[str, ...] = ()  # every rule of that table the call matched
    judge_verdict: Verdict | None = None  # the LLM judge's, when it ran
    auto_approved: str | None = None  # why it ran without asking the user
    original_arguments: str | None = None  # the model's, when the user edited the call
    # A file change whose text the user edited: what the model reads about it, hunk by hunk
    # (``core.approval.hunks``) instead of both argument texts.
    hunk_note: str | None = None
    # Commands: whether it runs in the OS sandbox (the approval mode decides; None: not a
    # command, or not gated).
    sandbox: SandboxUse | None = None
    # The model asks to run a command outside the sandbox: what the sandbox stopped (or
    # would stop) and why the model needs it (set by the tool's prepare).
    escalation: str | None = None

    @property
    def label(self) -> str:
        return self.approval_label or self.tool

    def file_change_info(self) -> FileChange | None:
        """The proposed file change as items and approvals show it (no full texts)."""
        fc = self.file_change
        if fc is None:
            return None
        return FileChange(path=fc.path, kind=fc.kind, unified_diff=fc.unified_diff,
                          truncated=fc.truncated)


def prepare_error(message: str, header: str = "") -> PreparedCall:
    """A prepared call that will not run: the model reads ``message`` as an error."""
    return PreparedCall(header=header or message.splitlines()[0][:200], error=message)


@dataclass(slots=True)
class ToolOutput:
    """What one executed call produced.

    ``content`` is text, or a list of OpenAI content parts (text and image_url)
    for multimodal results. ``summary`` is a short report for the editor
    (e.g. "12 lines"); the model always gets ``content``.
    """

    content: str | list[dict[str, Any]]
    is_error: bool = False
    effect_status: EffectStatus | None = None
    summary: str | None = None

    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        return "\n".join(p.get("text", "") for p in self.content if p.get("type") == "text")


@dataclass(slots=True)
class ToolSettings:
    """The configuration values tools read (from `[tools]` and `[model]`)."""

    timeout: int = 120  # default bash/search timeout, seconds
    truncation: int = 0  # per-result char cap; 0 = auto (half the context window)
    context_window: int = 32768
    supports_vision: bool = False
    env_passthrough: tuple[str, ...] = ()
    max_background_shells: int = 8


@dataclass(slots=True)
class Services:
    """Daemon-wide components handed to tools; None where not running (e.g. unit tests)."""

    store: Store | None = None  # the daemon's SQLite store
    mcp: MCPManager | None = None
    data_dir: Path | None = None
    config_dir: Path | None = None
    model_name: str | None = None
    # Extra system-message sections (MCP catalogs, the active skill, ...): each
    # callable returns text for a session, or "" to add nothing.
    prompt_sections: list[Callable[[SessionEnv], str]] = field(default_factory=list)
    web: WebServices | None = None  # the guarded fetcher, search endpoints, reranker
    previews: PreviewStore | None = None
    # A side call to a session's model without tools: (session_id, messages) -> the reply
    # text; raises turnstoned.llm.ModelError.
    ask_model: Callable[[str, list[dict[str, Any]]], Awaitable[str]] | None = None
    # Tell the editor that a preview is ready: (session_id, call_id, record, the content
    # security policy its kind is rendered under).
    preview_opened: Callable[[str, str, PreviewRecord, str], None] = (
        lambda sid, call, record, csp: None)
    # Tells the watch runner that watches were added or ended (it sleeps until the next poll).
    watches_changed: Callable[[], None] = lambda: None
    # Where ``notify`` sends (the editor, configured webhooks); None: the editor only.
    notify: NotifyConfig | None = None
    # Per-turn counters (e.g. notifications sent), keyed by "<what>:<turn id>".
    turn_counts: dict[str, int] = field(default_factory=dict)
    # Runs task agents (the ``task_agent`` tool); None where the engine is not running.
    agents: AgentRunner | None = None
    # Child sessions of coordinator sessions (the coordinator tools).
    coordinator: Coordination | None = None
    # Change a session's approval mode: (session_id, mode) (an approved plan leaves plan mode).
    set_mode: Callable[[str, ApprovalMode], object] | None = None
    # The editor following a session (its diagnostics, open files, symbols, unsaved buffers).
    editor: EditorLink | None = None
    # Ask the user an MCP server's question (mcpServer/elicit); None: nobody could answer.
    elicit: Callable[[McpElicitParams], Awaitable[McpElicitResponse | None]] | None = None
    # Show the user an MCP server's login page (mcpServer/authorize): True opened, False
    # shown as an address, None nobody could be asked.
    authorize: Callable[[McpAuthorizeParams], Awaitable[bool | None]] | None = None

    def need_store(self) -> Store:
        """The store, for a tool whose prepare checked it is there."""
        if self.store is None:
            raise RuntimeError("the daemon's store is not available here")
        return self.store

    def need_mcp(self) -> MCPManager:
        """The MCP manager, for a tool whose prepare checked it is there."""
        if self.mcp is None:
            raise RuntimeError("no MCP servers are configured")
        return self.mcp


@dataclass(frozen=True, slots=True)
class Closer:
    close: Callable[[], Awaitable[None]]
    kill_now: Callable[[], None]


@dataclass(slots=True)
class SessionEnv:
    """What a tool may know about, and keep in, the session it runs in."""

    session_id: str
    kind: AgentKind
    cwd: Path
    workspace: Path | None = None
    settings: ToolSettings = field(default_factory=ToolSettings)
    # Real paths (symlinks resolved) the model has read this session: the edit guard.
    read_set: set[str] = field(default_factory=set)
    # The editor's unsaved buffers (real path -> text), as they were when the current tool
    # batch began: file tools read and edit these instead of the disk.
    buffers: dict[str, str] = field(default_factory=dict)
    # Per-tool session state (e.g. "shells" for background shells), keyed by tool.
    state: dict[str, Any] = field(default_factory=dict)
    # Session-level notice to the editor and the model, e.g. a background shell
    # exited: notice(kind, text, data). The session folds `text` into the
    # conversation at the next seam and notifies the editor.
    notice: Callable[[str, str, dict[str, Any]], None] = lambda kind, text, data: None
    # The same for the editor only (e.g. a notification for the user): announce(kind, text, data).
    announce: Callable[[str, str, dict[str, Any]], None] = lambda kind, text, data: None
    # Send the editor a protocol notification (e.g. plan/updated).
    emit: Callable[[Event], None] = lambda event: None
    # Session state that survives a daemon restart (JSON values), e.g. the active
    # skill or tools expanded by tool search. Write it only through ``persist``.
    persisted: dict[str, Any] = field(default_factory=dict)
    save_persisted: Callable[[dict[str, Any]], None] = lambda state: None
    # Daemon-wide services tools may use (store, MCP manager, ...).
    services: Services = field(default_factory=lambda: Services())
    # How to release what tools opened for the session (background shells, ...).
    closers: list[Closer] = field(default_factory=list)

    def on_close(self, close: Callable[[], Awaitable[None]], kill_now: Callable[[], None]) -> None:
        """Register a resource: ``close`` ends it gracefully when the session closes,
        ``kill_now`` ends it at once at daemon exit (outside any event loop)."""
        self.closers.append(Closer(close, kill_now))

    async def close(self) -> None:
        """Close every registered resource (each failure is logged; the others still close)."""
        for closer in list(self.closers):
            try:
                await closer.close()
            except Exception:  # one resource must not keep the others open
                log.exception("closing a resource of session %s", self.session_id)

    def kill_now(self) -> None:
        """The last resort at daemon exit: end every registered resource without waiting."""
        for closer in list(self.closers):
            try:
                closer.kill_now()
            except OSError:
                log.exception("killing a resource of session %s", self.session_id)

    def persist(self, key: str, value: Any) -> None:
        """Set (or, with None, remove) a persisted session value and save it."""
        if value is None:
            self.persisted.pop(key, None)
        else:
            self.persisted[key] = value
        self.save_persisted(self.persisted)

    def resolve(self, path: str) -> Path:
        """A user-supplied path made absolute against the session's cwd (``~`` expanded)."""
        p = Path(path).expanduser()
        return p if p.is_absolute() else self.cwd / p

    def workspace_root(self) -> str:
        """The real path (symlinks resolved) of the workspace folder, else of the cwd."""
        return os.path.realpath(self.workspace or self.cwd)

    def output_cap(self) -> int:
        """The per-result char cap for a tool's own output (before the budget guard)."""
        if self.settings.truncation > 0:
            return self.settings.truncation
        return max(16_384, int(self.settings.context_window * 4 * 0.5))


class AgentRunner(Protocol):
    """Runs the sub-agent of a ``task_agent`` call (the engine's ``core.agent``)."""

    async def run(self, prompt: str, call: PreparedCall, ctx: ToolContext) -> ToolOutput: ...


class ToolHandle(Protocol):
    """A callable tool as the pipeline sees it (a built-in module, an MCP tool, tool search)."""

    name: str
    primary_key: str | None

    def prepare(self, args: dict[str, Any], ctx: ToolContext) -> PreparedCall: ...

    async def execute(self, call: PreparedCall, ctx: ToolContext) -> ToolOutput: ...


@dataclass(slots=True)
class ToolContext:
    """Handed to prepare and execute: the session plus this one call."""

    env: SessionEnv
    call_id: str = ""
    cancel: asyncio.Event = field(default_factory=asyncio.Event)
    turn_id: str = ""  # the turn the call belongs to (a task agent's calls: its parent's turn)
    # Stream a chunk of output to the editor (item/toolCall/outputDelta).
    emit_output: Callable[[str], None] = lambda chunk: None


def truncate_middle(text: str, limit: int, total: int | None = None) -> str:
    """Keep the head and tail of ``text`` within ``limit`` chars, saying what was cut.

    ``total`` is the length the output really had when part of it was already dropped
    while it streamed (the notice counts against it; ``text`` is then cut even if short).
    """
    full = len(text) if total is None else total
    if limit <= 0 or full <= limit:
        return text
    half = limit // 2
    return (f"{text[:half]}\n\n{truncation_notice(full - 2 * half, limit)}\n\n"
            f"{text[len(text) - half:]}")


def truncation_notice(omitted: int, limit: int) -> str:
    """The line that stands where the middle of a long output was cut."""
    return f"... [{omitted} chars truncated — output exceeded {limit} char limit] ..."
