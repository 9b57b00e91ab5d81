"""``turnstoned doctor``: check the setup, one line per check, each failure with its fix.

Checks: the config file is found and valid; the data directory is writable;
the model server answers and lists the configured model (with nothing
configured: which local servers run on this machine, and the exact config to
use one); on request (``--tool-call``) a real tool call by the model; the
user's MCP servers start; which backend web_search uses (SearxNG, an MCP tool
named or chosen automatically among those servers' tools, or none); a project
``.mcp.json`` in the current folder is only reported (trusted or not), never
started; ripgrep is installed; the runtime directory is private and whether a
resident daemon runs. Exit code 1 when a check failed (WARN: works, but worse
than it could).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from turnstoned import config, paths
from turnstoned.daemon import rundir
from turnstoned.llm.discovery import LOCAL_SERVERS, LocalServer, probe_local

if TYPE_CHECKING:
    from turnstoned.mcp.models import MCPTool, ServerStatus

Status = Literal["OK", "WARN", "FAIL"]
MCP_TIMEOUT = 30.0


@dataclass(frozen=True, slots=True)
class Line:
    status: Status
    what: str
    fix: str = ""


def _clean(text: str) -> str:
    """No terminal control sequences from a server's answer or a file on the screen."""
    return "".join(c if c == "\n" or c.isprintable() else "?" for c in text)


def model_config_text(base_url: str, name: str) -> str:
    return f'[model]\nbase_url = "{base_url}"\nname = "{name}"'


class Doctor:
    """Runs the checks; ``lines`` holds the results in order."""

    def __init__(self, *, tool_call: bool = False,
                 local_servers: Sequence[tuple[str, int]] = LOCAL_SERVERS,
                 host: str = "127.0.0.1", cwd: Path | None = None,
                 on_line: Callable[[Line], None] = lambda line: None) -> None:
        self.tool_call = tool_call
        self.on_line = on_line
        self.local_servers = local_servers
        self.host = host
        self.cwd = cwd or Path.cwd()
        self.lines: list[Line] = []

    def add(self, status: Status, what: str, fix: str = "") -> None:
        line = Line(status, _clean(what), _clean(fix))
        self.lines.append(line)
        self.on_line(line)

    @property
    def failed(self) -> bool:
        return any(line.status == "FAIL" for line in self.lines)

    def run(self) -> list[Line]:
        cfg = self.check_config()
        self.check_data_dir()
        if cfg is not None:
            self.check_model(cfg)
            self.check_mcp(cfg)
        self.check_project()
        self.check_ripgrep()
        self.check_sandbox()
        self.check_resident()
        return self.lines

    def check_sandbox(self) -> None:
        from turnstoned import sandbox

        state = sandbox.status()
        if state.available:
            self.add("OK", f"sandbox: {state.detail}")
            return
        # A warning, not a failure: without a sandbox, auto mode asks about commands.
        self.add("WARN", f"sandbox: none ({state.detail}); in auto mode commands ask before "
                       "they run (Linux with Landlock, 5.13 or newer, sandboxes them)")

    # ----------------------------------------------------------- config and files

    def check_config(self) -> config.Config | None:
        path = paths.config_file()
        try:
            cfg = config.load()
        except config.ConfigError as exc:
            self.add("FAIL", f"config: {exc}", f"edit {path} (`turnstoned doctor` again to check)")
            return None
        if path.exists():
            self.add("OK", f"config: {path}")
        else:
            self.add("OK", f"config: no file at {path}; defaults and the environment apply")
        return cfg

    def check_data_dir(self) -> None:
        where = paths.data_dir()
        try:
            where.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=where, prefix=".doctor-"):
                pass
        except OSError as exc:
            self.add("FAIL", f"data directory: cannot write to {where}: {exc.strerror}",
                     f"make {where} writable for you, or set TURNSTONED_HOME to a folder that is")
            return
        self.add("OK", f"data directory: {where} is writable")

    def check_ripgrep(self) -> None:
        rg = shutil.which("rg")
        if rg is None:
            self.add("WARN", "ripgrep: `rg` is not on PATH; the search tool falls back to grep",
                     "install ripgrep (Debian/Ubuntu: `apt install ripgrep`, macOS: "
                     "`brew install ripgrep`)")
            return
        try:
            out = subprocess.run([rg, "--version"], capture_output=True, text=True, timeout=10,
                                 check=False)
            version = out.stdout.splitlines()[0] if out.stdout else rg
        except (OSError, subprocess.SubprocessError):
            version = rg
        self.add("OK", f"ripgrep: {version}")

    # ----------------------------------------------------------- the model

    def check_model(self, cfg: config.Config) -> None:
        from turnstoned.llm.types import ModelError

        model = config.resolve_model(cfg.model)
        if isinstance(model, config.ModelSettings):
            self._check_named(model.name, model.base_url, model.api_key)
            if self.tool_call:
                self._check_tool_call(model)
            return
        if cfg.model.api_key_env and not os.environ.get(cfg.model.api_key_env):
            self.add("FAIL", f"model: {model}",
                     f"set {cfg.model.api_key_env} in the environment turnstoned starts in (the "
                     "editor's, or the shell that runs `turnstoned serve`)")
            return
        target = config.discovery_target(cfg.model)
        if target is None:
            self._nothing_configured()
            return
        url, key = target
        try:
            ids = self._models(url, key)
        except ModelError as exc:
            self._unreachable(url, exc)
            return
        if len(ids) == 1:
            self.add("OK", f"model: none named; {url} lists only {ids[0]}, which is used")
            named = config.resolve_model(cfg.model, ids[0])
            if self.tool_call and isinstance(named, config.ModelSettings):
                self._check_tool_call(named)
        else:
            self.add("FAIL", f"model: none named, and {url} lists {len(ids)} models",
                     f"choose one in {paths.config_file()}:\n"
                     + model_config_text(url, ids[0] if ids else "NAME")
                     + (f"\n(it lists: {', '.join(ids[:20])})" if ids else ""))

    def _models(self, url: str | None, key: str) -> list[str]:
        """The ids the server lists; raises ``ModelError``."""
        from turnstoned.llm.discovery import list_models
        from turnstoned.llm.openai_chat import classify

        listing = list_models(url, key)
        if listing.error is not None:
            raise classify(listing.error)
        return listing.ids

    def _check_named(self, name: str, url: str | None, key: str) -> None:
        from turnstoned.llm.types import ModelError

        where = url or "the OpenAI API"
        try:
            ids = self._models(url, key)
        except ModelError as exc:
            self._unreachable(where, exc)
            return
        if name in ids or f"{name}:latest" in ids:
            self.add("OK", f"model: {name} is listed by {where}")
            return
        listed = ", ".join(ids[:20]) + (", ..." if len(ids) > 20 else "")
        self.add("FAIL", f"model: {where} does not list {name} (it lists: {listed or 'nothing'})",
                 f"set [model] name in {paths.config_file()} (or TURNSTONED_MODEL) to a model "
                 "it lists")

    def _unreachable(self, where: str, exc: Exception) -> None:
        kind = getattr(exc, "kind", "")
        if kind == "unauthorized":
            fix = ("set OPENAI_API_KEY (or the variable [model] api_key_env names) to a valid key "
                   "in the environment turnstoned starts in")
        else:
            fix = (f"start the server at {where}, or fix [model] base_url in "
                   f"{paths.config_file()} (or OPENAI_BASE_URL)")
        self.add("FAIL", f"model server: {exc}", fix)

    def _nothing_configured(self) -> None:
        found = self.local()
        file = paths.config_file()
        if not found:
            ports = ", ".join(f"{n} {p}" for n, p in self.local_servers)
            self.add("FAIL", f"model: none is configured, and no local server answers on "
                             f"{self.host} ({ports})",
                     "start a local OpenAI-compatible server (Ollama, llama.cpp's llama-server, "
                     f"vLLM, LM Studio), or for a hosted API put in {file}:\n"
                     + model_config_text("https://api.example.com/v1", "MODEL")
                     + "\nand set OPENAI_API_KEY in the environment turnstoned starts in")
            return
        usable = [s for s in found if s.models]
        if not usable:
            what = ", ".join(f"{s.name} at {s.base_url}" for s in found)
            self.add("FAIL", f"model: none is configured; found {what}, but it lists no model",
                     "load a model into it (Ollama: `ollama pull NAME`), then run doctor again")
            return
        best = usable[0]
        others = "".join(f"\nalso found {s.name} at {s.base_url} ({', '.join(s.models[:5])})"
                         for s in usable[1:])
        self.add("FAIL", f"model: none is configured; found {best.name} at {best.base_url} "
                         f"serving {', '.join(best.models[:5])}",
                 f"put this in {file}:\n{model_config_text(best.base_url, best.models[0])}"
                 f"\n(or set OPENAI_BASE_URL={best.base_url} and "
                 f"TURNSTONED_MODEL={best.models[0]}){others}")

    def local(self) -> list[LocalServer]:
        """The local servers answering on their usual ports."""
        return [s for name, port in self.local_servers
                if (s := probe_local(self.host, port, name)) is not None]

    def _check_tool_call(self, model: config.ModelSettings) -> None:
        from turnstoned.llm.probe import tool_round_trip
        from turnstoned.llm.types import ModelError

        try:
            made = tool_round_trip(model)
        except ModelError as exc:
            self.add("FAIL", f"tool call: {model.name}: {exc.message}",
                     "use a model and server with tool calling: llama.cpp's llama-server with "
                     "--jinja, vLLM with --enable-auto-tool-choice and a --tool-call-parser, "
                     "an Ollama model tagged 'tools'")
            return
        self.add("OK", f"tool call: {model.name} called {made}")

    # ----------------------------------------------------------- MCP

    def check_mcp(self, cfg: config.Config) -> None:
        statuses, tools = asyncio.run(self._start_mcp(cfg))
        servers = [s for s in statuses if s.name]
        for issue in (s for s in statuses if not s.name):
            self.add("FAIL", f"MCP config {issue.origin}: {issue.error}",
                     f"fix {issue.origin.partition(':')[2] or paths.config_file()}")
        if not servers:
            self.add("OK", "MCP servers: none configured")
        for s in servers:
            if s.status == "connected":
                self.add("OK", f"MCP server {s.name}: connected ({s.tools} tools)")
            else:
                self.add("FAIL", f"MCP server {s.name}: {s.status}: {s.error or 'no answer'}",
                         f"check its command (or url) in {s.origin}")
        self.check_web_search(cfg, tools)

    def check_web_search(self, cfg: config.Config, tools: Sequence[MCPTool]) -> None:
        """Which backend web_search uses with these MCP tools connected (a session sees a
        project's servers too, which doctor does not start)."""
        from turnstoned.net.services import web_settings
        from turnstoned.tools import web_search

        settings = web_settings(cfg)
        chosen = web_search.choose(settings, tools)
        what = f"web_search: {chosen.describe()}"
        if chosen.backend is not None or settings.web_search_backend == "none":
            self.add("OK", what)
        elif settings.web_search_backend:
            self.add("WARN", what, f"connect that server, or change [tools] web_search_backend "
                                   f"in {paths.config_file()}")
        else:
            self.add("WARN", what, f"{web_search.HOW_TO} (in {paths.config_file()})")

    async def _start_mcp(self, cfg: config.Config) -> tuple[list[ServerStatus], list[MCPTool]]:
        from turnstoned.core.build import mcp_manager

        manager = mcp_manager(cfg)
        await manager.start()
        try:
            await manager.wait_ready(MCP_TIMEOUT)
        except TimeoutError:
            pass  # the ones still connecting are reported as they are
        try:
            return list(manager.status()), list(manager.tools())
        finally:
            await manager.close()

    def check_project(self) -> None:
        """A ``.mcp.json`` here is only reported: doctor never starts a project's servers."""
        from turnstoned.mcp.project import read_project
        from turnstoned.store import Store
        from turnstoned.store.trust import TrustStore

        workspace = self.cwd.resolve()
        project = read_project(workspace)
        if project is None:
            return
        count = len(project.table)
        try:
            store = Store(paths.database_file())
        except OSError:
            return  # reported by the data directory check
        try:
            decision = TrustStore(store).decision(str(workspace), project.hash)
        finally:
            store.close()
        state = {"trusted": "trusted; its servers start in sessions here",
                 "denied": "denied; its servers never start",
                 None: "not trusted yet; its servers start once you trust this version"}[decision]
        self.add("OK", f"project MCP config {project.path}: {count} server(s), {state} "
                       "(doctor does not start them)")

    # ----------------------------------------------------------- the resident daemon

    def check_resident(self) -> None:
        from turnstoned.cli.chat import mismatch

        directory = rundir.runtime_dir()
        moved = rundir.displaced()
        if moved:
            self.add("OK", f"resident daemon: {moved}")
        try:
            if os.path.lexists(directory):
                rundir.check_dir(directory)
            sock = rundir.connect(rundir.socket_path(directory))
        except rundir.RundirError as exc:
            self.add("FAIL", f"resident daemon: {exc}")
            return
        if sock is None:
            self.add("OK", "resident daemon: not running (`turnstoned attach` or `turnstoned chat` "
                           "start it)")
            return
        with sock:
            pid = rundir.peer_pid(sock)
            health = _ask_health(sock)
        if health is None:
            self.add("FAIL", f"resident daemon (pid {pid}): does not answer",
                     "`turnstoned stop`, then let the next client start it")
        elif health.get("configError"):
            self.add("FAIL", f"resident daemon (pid {pid}): {health['configError']}",
                     "fix it, then `turnstoned stop`: the next client starts a fresh daemon")
        elif (differs := mismatch(health)) is not None:
            self.add("FAIL", f"resident daemon (pid {pid}): "
                     + differs.removeprefix("turnstoned: the resident daemon "),
                     "`turnstoned stop`: the next client starts a daemon with this shell's settings")
        else:
            others = int(str(health.get("clients", 1))) - 1
            self.add("OK", f"resident daemon: running (pid {pid}, {others} other client(s), "
                           f"model {health.get('model') or 'none'}); it keeps the environment it "
                           "was started with (`turnstoned stop` to change it)")
            if health.get("webSearch"):
                self.add("OK", f"resident daemon: web_search: {health['webSearch']}")


def _ask_health(sock: socket.socket) -> dict[str, object] | None:
    from turnstoned.cli.chat import Failure, Wire

    wire = Wire(sock.fileno(), sock.sendall)
    try:
        wire.request("initialize", {"capabilities": {}}, timeout=10)
        wire.notify("initialized")
        health = wire.request("daemon/health", timeout=10)
        wire.request("shutdown", timeout=10)
        wire.notify("exit")
    except (Failure, TimeoutError, OSError):
        return None
    return health if isinstance(health, dict) else None


def render(line: Line) -> str:
    out = [f"{line.status:<5} {line.what}"]
    if line.fix:
        fix = line.fix.splitlines()
        out.append(f"      fix: {fix[0]}")
        out += [f"        {more}" for more in fix[1:]]
    return "\n".join(out)


def main(tool_call: bool) -> int:
    doctor = Doctor(tool_call=tool_call, on_line=lambda line: print(render(line), flush=True))
    doctor.run()
    return 1 if doctor.failed else 0
