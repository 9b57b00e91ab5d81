"""The daemon's configuration: TOML decoded into msgspec Structs.

An unknown key or a value of the wrong type is a ``ConfigError`` naming the
file, the key and what was expected. Environment variables fill in the model
when the file does not say: ``OPENAI_BASE_URL``, ``OPENAI_API_KEY`` (the
OpenAI SDK's own) and ``TURNSTONED_MODEL``.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import msgspec

from turnstoned import paths


class ConfigError(Exception):
    """The configuration file cannot be used; the message says where and why."""


class _Section(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    pass


class ModelConfig(_Section):
    base_url: str | None = None
    name: str | None = None
    api_key_env: str | None = None
    context_window: Annotated[int, msgspec.Meta(ge=1024)] = 32768
    supports_vision: bool = False
    max_tokens: Annotated[int, msgspec.Meta(ge=1)] | None = None
    temperature: float | None = None
    request_timeout: Annotated[float, msgspec.Meta(gt=0)] = 600.0
    # The provider defers tools itself: send deferred definitions with
    # `defer_loading: true` instead of the client-side tool_search.
    native_tool_search: bool = False
    # How tool calls travel: the server's own (native), written as text in the reply
    # (text: for servers and models without tool calling), or native until the server
    # refuses tools or the model writes its calls as text (auto; remembered per model).
    tool_calling: Literal["auto", "native", "text"] = "auto"


class ToolsConfig(_Section):
    timeout: Annotated[int, msgspec.Meta(ge=1, le=3600)] = 120
    approval_timeout_seconds: Annotated[float, msgspec.Meta(ge=0)] = 0
    skip_permissions: bool = False
    truncation: Annotated[int, msgspec.Meta(ge=0)] = 0
    env_passthrough: list[str] = []
    max_background_shells: Annotated[int, msgspec.Meta(ge=1, le=64)] = 8
    auto_approve_tools: list[str] = []
    search: Literal["auto", "on", "off"] = "auto"
    search_threshold: Annotated[int, msgspec.Meta(ge=0)] = 20
    search_max_results: Annotated[int, msgspec.Meta(ge=1, le=50)] = 5
    output_guard: bool = True  # flag prompt injection and secrets in tool results
    redact_secrets: bool = True  # replace credentials before the model sees them
    # Web tools. Private-network addresses are refused unless this is true (and each
    # such fetch still asks); metadata and link-local addresses are refused always.
    allow_private_network: bool = False
    searxng_url: str = ""  # a SearxNG instance with JSON output enabled
    searxng_engines: str = ""  # comma-separated engines to ask (default: the instance's)
    # "searxng": SearxNG at searxng_url; "mcp:<server>:<tool>": that MCP tool; "none": no
    # web search; "" (automatic): SearxNG when searxng_url is set, else the first connected
    # MCP tool that is a web search (turnstoned.tools.web_search).
    web_search_backend: Annotated[
        str, msgspec.Meta(pattern=r"^(|none|searxng|mcp:[^:]+:.+)$")] = ""
    reranker_alias: str = ""  # a [models.<alias>] entry with supports_rerank = true
    rerank_web_search: bool = True
    rerank_bm25: bool = True  # memory, tool and skill candidates too
    rerank_instruction: str = ""  # sent as "<Instruct>: ...\n<Query>: ..." when set
    agent_max_turns: Annotated[int, msgspec.Meta(ge=1, le=200)] = 50  # model calls per task agent
    max_parallel_agents: Annotated[int, msgspec.Meta(ge=1, le=16)] = 4  # daemon-wide


class ChannelConfig(_Section):
    """A webhook ``notify`` posts to: the URL itself, or the environment variable holding it."""

    url: str | None = None
    url_env: str | None = None
    format: Literal["json", "slack", "discord"] = "json"
    headers: dict[str, str] = {}

    def __post_init__(self) -> None:
        if (self.url is None) == (self.url_env is None):
            raise ValueError("a channel needs exactly one of `url` and `url_env`")
        if self.url is not None and not re.match(r"^https?://", self.url, re.IGNORECASE):
            raise ValueError("a channel's `url` must start with http:// or https://")


class NotifyConfig(_Section):
    editor: bool = True  # send notifications to the editor as session/notice kind "notify"
    timeout_seconds: Annotated[float, msgspec.Meta(gt=0, le=120)] = 10.0
    channels: dict[str, ChannelConfig] = {}


class SessionConfig(_Section):
    max_rounds: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 50
    # Summarise the older part of a session when the next prompt would fill this share
    # of the context window, or the server refuses it as too long (0: only on request,
    # with session/compact).
    compact_at: Annotated[float, msgspec.Meta(ge=0, le=1)] = 0.8
    keep_recent_turns: Annotated[int, msgspec.Meta(ge=0, le=100)] = 2  # kept word for word
    # At most this many tokens of recent turns are kept (0: a quarter of the window).
    keep_recent_tokens: Annotated[int, msgspec.Meta(ge=0)] = 0
    # The longest summary, in tokens (0: an eighth of the window, at most 2048).
    summary_tokens: Annotated[int, msgspec.Meta(ge=0)] = 0


class MCPConfig(_Section):
    config_path: str | None = None
    # Server entries are validated one by one by the MCP layer, so that one bad
    # entry disables that server instead of the daemon.
    servers: dict[str, dict[str, Any]] = {}
    health_check_seconds: Annotated[float, msgspec.Meta(gt=0)] = 30.0
    call_timeout_seconds: Annotated[float, msgspec.Meta(gt=0)] = 120.0
    # The servers of a project's .mcp.json (the session's workspace or cwd): "ask" lists
    # them untrusted until the user trusts that exact file, "trust" starts them unasked,
    # "never" ignores the file. The old boolean still works: true is "ask", false "never".
    project_config: Literal["ask", "never", "trust"] | bool = "ask"

    @property
    def project_mode(self) -> Literal["ask", "never", "trust"]:
        if isinstance(self.project_config, bool):
            return "ask" if self.project_config else "never"
        return self.project_config


class ModelEntry(_Section):
    """A named model endpoint under ``[models.<alias>]`` (e.g. a reranker, the judge)."""

    base_url: str  # a reranker: the full endpoint URL (.../rerank); a chat model: its /v1 base
    name: str = ""
    api_key_env: str | None = None
    supports_rerank: bool = False
    max_concurrency: Annotated[int, msgspec.Meta(ge=1, le=64)] = 4
    context_window: Annotated[int, msgspec.Meta(ge=1024)] = 32768


class JudgeConfig(_Section):
    """The LLM judge: a second verdict on every call that asks (``[judge]``)."""

    enabled: bool = False
    model: str = ""  # a [models.<alias>] entry; "" = the session's own model
    timeout: Annotated[float, msgspec.Meta(gt=0, le=600)] = 30.0
    # Approve a batch unasked when the judge is sure every call is safe (implies enabled).
    smart_approvals: bool = False
    confidence_threshold: Annotated[float, msgspec.Meta(ge=0, le=1)] = 0.95


class GuardConfig(_Section):
    """``[guard]``: the output guard's optional second look at flagged tool results."""

    # When the heuristics flag a tool result (prompt injection, risky content), ask the
    # session's model to rate it (one side call per flagged result, counted in the turn).
    llm_check: bool = False
    llm_timeout: Annotated[float, msgspec.Meta(gt=0, le=120)] = 8.0  # seconds per rating


class ApprovalsConfig(_Section):
    """``[approvals]``: what runs without asking in new sessions."""

    # read-only | auto (reads, workspace edits and sandboxed commands run unasked) |
    # full-access (no sandbox; destructive, credential and outside-the-workspace calls ask)
    # | plan (read-only while the model writes a plan the user approves).
    mode: Literal["read-only", "auto", "full-access", "plan"] = "auto"


class PolicyRule(_Section):
    """One tool policy (``[[policies]]`` in config.toml or a workspace's policies.toml).

    Every pattern given must match: ``label`` (a glob over the approval label or the
    tool's name), ``command`` (over each part of a bash command, as words joined by
    spaces) and ``path`` (over the paths a call touches; a relative pattern is relative
    to the workspace, ``*`` crosses directories). The highest ``priority`` wins; on a
    tie deny beats ask beats allow.
    """

    action: Literal["allow", "deny", "ask"]
    label: str = "*"
    command: str | None = None
    path: str | None = None
    priority: int = 0
    reason: str = ""


class PolicyFile(_Section):
    """A workspace's ``.turnstone/policies.toml``."""

    policies: list[PolicyRule] = []


class DaemonConfig(_Section):
    # A frame over this size is skipped and answered with an error.
    max_frame_mib: Annotated[int, msgspec.Meta(ge=1, le=4096)] = 64
    # `turnstoned serve` exits after this long with no client attached and no turn running.
    idle_timeout_seconds: Annotated[float, msgspec.Meta(gt=0)] = 600.0


class Config(_Section):
    model: ModelConfig = msgspec.field(default_factory=ModelConfig)
    models: dict[str, ModelEntry] = {}
    tools: ToolsConfig = msgspec.field(default_factory=ToolsConfig)
    session: SessionConfig = msgspec.field(default_factory=SessionConfig)
    mcp: MCPConfig = msgspec.field(default_factory=MCPConfig)
    daemon: DaemonConfig = msgspec.field(default_factory=DaemonConfig)
    notify: NotifyConfig = msgspec.field(default_factory=NotifyConfig)
    judge: JudgeConfig = msgspec.field(default_factory=JudgeConfig)
    guard: GuardConfig = msgspec.field(default_factory=GuardConfig)
    approvals: ApprovalsConfig = msgspec.field(default_factory=ApprovalsConfig)
    policies: list[PolicyRule] = []


_AT = re.compile(r" - at `\$\.?([^`]*)`$")


def _explain(file: Path, err: msgspec.ValidationError, section: str = "") -> str:
    msg = str(err)
    m = _AT.search(msg)
    key = section
    if m:
        inner = re.sub(r"\[(\d+)\]", r"[\1]", m.group(1))
        key = f"{section}.{inner}" if section and inner else section or inner
        msg = msg[: m.start()]
    unknown = re.match(r"Object contains unknown field `([^`]+)`", msg)
    if unknown:
        full = f"{key}.{unknown.group(1)}" if key else unknown.group(1)
        return f"{file}: unknown key `{full}`"
    where = f" at key `{key}`" if key else ""
    return f"{file}:{where}: {msg[0].lower()}{msg[1:]}" if where else f"{file}: {msg}"


def _problems(file: Path, data: dict[str, Any], kind: type[Any] = Config) -> list[str]:
    """Every problem of the file, each once: every key is checked on its own."""
    sections = {f.encode_name: f.type for f in msgspec.structs.fields(kind)}
    problems = []
    for name, value in data.items():
        section = sections.get(name)
        if section is None:
            problems.append(f"{file}: unknown key `{name}`")
            continue
        items = value.items() if isinstance(value, dict) else [(None, value)]
        for key, item in items:
            try:
                msgspec.convert(item if key is None else {key: item}, section)
            except msgspec.ValidationError as exc:
                problems.append(_explain(file, exc, name))
    return problems


def load(file: Path | None = None) -> Config:
    """Read the config file. The default file may be missing (defaults); a file named
    by ``TURNSTONED_CONFIG`` or the caller must exist."""
    by_env = file is None and bool(os.environ.get("TURNSTONED_CONFIG"))
    named = file is not None or by_env
    file = file or paths.config_file()
    try:
        raw = file.read_bytes()
    except FileNotFoundError as exc:
        if named:
            via = "TURNSTONED_CONFIG names " if by_env else ""
            raise ConfigError(f"{via}{file}: no such config file") from exc
        return Config()
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read: {exc.strerror}") from exc
    return decode(file, raw, Config)


def save_model(name: str, base_url: str | None, file: Path | None = None) -> Path:
    """Write ``name`` (and ``base_url``) into the ``[model]`` section of the config file,
    keeping every other line as it is; the file is checked to still load before it
    replaces the old one. Raises ``ConfigError``."""
    file = file or paths.config_file()
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read: {exc.strerror}") from exc
    values = {"name": name, **({"base_url": base_url} if base_url else {})}
    lines = text.splitlines()
    header = next((i for i, line in enumerate(lines) if line.strip() == "[model]"), None)
    if header is None:
        lines = [*lines, *([""] if lines else []), "[model]"]
        header = len(lines) - 1
    end = next((i for i in range(header + 1, len(lines))
                if lines[i].lstrip().startswith("[")), len(lines))
    for key, value in values.items():
        entry = f"{key} = {json.dumps(value)}"  # a TOML basic string is a JSON string
        found = next((i for i in range(header + 1, end)
                      if lines[i].split("=", 1)[0].strip() == key), None)
        if found is None:
            lines.insert(header + 1, entry)
            end += 1
        else:
            lines[found] = entry
    new = "\n".join(lines) + "\n"
    decode(file, new.encode(), Config)  # never write a file the daemon cannot read
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        tmp = file.with_name(f".{file.name}.{os.getpid()}.tmp")
        tmp.write_text(new, encoding="utf-8")
        os.replace(tmp, file)
    except OSError as exc:
        raise ConfigError(f"{file}: cannot write: {exc.strerror}") from exc
    return file


T = TypeVar("T")


def decode(file: Path, raw: bytes, kind: type[T]) -> T:
    """A TOML file's bytes as ``kind``; ``ConfigError`` names the file and the key."""
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{file}: not valid TOML: {exc}") from exc
    problems = _problems(file, data, kind)
    if problems:
        raise ConfigError("\n".join(problems))
    try:
        return msgspec.convert(data, kind)
    except msgspec.ValidationError as exc:  # a constraint across keys: reported as one
        raise ConfigError(_explain(file, exc)) from exc


def with_overrides(cfg: Config, overrides: dict[str, dict[str, Any]]) -> Config:
    """``cfg`` with section values replaced (command-line flags win over the file)."""
    for section, values in overrides.items():
        current = getattr(cfg, section)
        cfg = msgspec.structs.replace(cfg, **{section: msgspec.structs.replace(current, **values)})
    return cfg


@dataclass(frozen=True, slots=True)
class ModelSettings:
    """A model the daemon can call, resolved from config and environment."""

    name: str
    base_url: str | None
    api_key: str
    context_window: int
    supports_vision: bool
    max_tokens: int | None
    temperature: float | None
    request_timeout: float
    tool_calling: str = "auto"  # auto | native | text


NOT_CONFIGURED = (
    "No model is configured. Set `name` (and `base_url` for a local server) under "
    "[model] in {file}, or set TURNSTONED_MODEL (and OPENAI_BASE_URL, OPENAI_API_KEY) "
    "in the daemon's environment."
)


def _api_key(cfg: ModelConfig) -> str:
    """The key to send, or raise ``ConfigError`` when ``api_key_env`` names an unset variable."""
    if cfg.api_key_env:
        key = os.environ.get(cfg.api_key_env)
        if not key:
            raise ConfigError(
                f"[model] api_key_env names {cfg.api_key_env}, which is not set in the environment.")
        return key
    return os.environ.get("OPENAI_API_KEY") or "no-key"


def resolve_model(cfg: ModelConfig, override_name: str | None = None) -> ModelSettings | str:
    """The model to call, or a message telling the user how to configure one."""
    name = override_name or cfg.name or os.environ.get("TURNSTONED_MODEL")
    if not name:
        return NOT_CONFIGURED.format(file=paths.config_file())
    try:
        key = _api_key(cfg)
    except ConfigError as exc:
        return str(exc)
    return ModelSettings(
        name=name,
        base_url=cfg.base_url or os.environ.get("OPENAI_BASE_URL") or None,
        api_key=key,
        context_window=cfg.context_window,
        supports_vision=cfg.supports_vision,
        max_tokens=cfg.max_tokens,
        temperature=cfg.temperature,
        request_timeout=cfg.request_timeout,
        tool_calling=cfg.tool_calling,
    )


def discovery_target(cfg: ModelConfig) -> tuple[str, str] | None:
    """``(base URL, key)`` of a server to ask which model to use: no model is named
    anywhere, but a base URL is (a first run with only ``OPENAI_BASE_URL`` set)."""
    if cfg.name or os.environ.get("TURNSTONED_MODEL"):
        return None
    url = cfg.base_url or os.environ.get("OPENAI_BASE_URL")
    if not url:
        return None
    try:
        return url, _api_key(cfg)
    except ConfigError:
        return None


def resolve_entry(entry: ModelEntry, timeout: float) -> ModelSettings | str:
    """A ``[models.<alias>]`` chat endpoint as a model to call (e.g. the judge's)."""
    key = "no-key"
    if entry.api_key_env:
        key = os.environ.get(entry.api_key_env) or ""
        if not key:
            return f"api_key_env names {entry.api_key_env}, which is not set in the environment."
    return ModelSettings(name=entry.name or "default", base_url=entry.base_url, api_key=key,
                         context_window=entry.context_window, supports_vision=False,
                         max_tokens=None, temperature=0.0, request_timeout=timeout)
