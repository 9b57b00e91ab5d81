"""search: a regex search under a path, through ripgrep when it is installed, else grep.

Both backends give the same output for the same tree: records are sorted by
path and line, long lines are cut the same way, and grep's results are
filtered to what ripgrep would visit (no hidden files, no excluded directories
below the search root). Differences that remain: ripgrep honours .gitignore
and skips files over 10 MB; grep does neither, and uses POSIX extended regex
where ripgrep uses Rust regex syntax.

Patterns and paths can never become options: rg gets ``-e PATTERN -- PATH``
and grep ``-- PATTERN PATH``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import re
import selectors
import shutil
import signal
import subprocess
import threading
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import msgspec

from turnstoned.tools._paths import place, read_gate
from turnstoned.tools.base import PreparedCall, ToolContext, ToolOutput, prepare_error

EXCLUDED_DIRS = (
    ".git", "node_modules", "target", "__pycache__", ".mypy_cache", ".ruff_cache",
    ".pytest_cache", "dist", "build", "*.egg-info", ".tox", ".venv", "venv", "vendor",
)  # fmt: skip
MAX_PER_FILE = 100
MAX_COLUMNS = 1024
STDOUT_CAP = 4 * 1024 * 1024
STDERR_CAP = 64 * 1024
BUDGET = 32_768
LADDER = (5, 3, 1)
_RG_OMITTED = " [... omitted end of long line]"
_CUT = "...[truncated, line length > 1024]"
_READ_CHUNK = 1 << 20

Record = tuple[str, int, str]  # path, line, content


class Args(msgspec.Struct, kw_only=True):
    query: str = ""
    path: str = "."


@dataclass(slots=True)
class _Search:
    query: str
    root: str  # the path argument as the backend gets it (relative to cwd, or absolute)
    cwd: Path


@dataclass(slots=True)
class _Raw:
    rc: int
    out: bytes
    err: bytes
    capped: bool


class _Stopped(Exception):
    """The search was stopped by the session's cancel event."""


def prepare(args: Args, ctx: ToolContext) -> PreparedCall:
    if not args.query:
        return prepare_error("Error: missing query")
    display = (args.path or ".").strip() or "."
    if not os.path.lexists(ctx.env.resolve(display)):
        return prepare_error(f"Error: {display} not found")
    root = os.path.expanduser(display) if display.startswith("~") else display
    where = place(ctx.env, display)
    return PreparedCall(
        header=f"⚙ search: {args.query} in {display}{where.note()}",
        **read_gate([where]),
        data=_Search(args.query, root, ctx.env.cwd),
    )


# -- backends -----------------------------------------------------------------------


@functools.lru_cache(maxsize=8)
def _which(name: str, search_path: str | None) -> str | None:
    return shutil.which(name, path=search_path)


def backend() -> tuple[str, str] | None:
    """(name, executable) of the backend to use: rg when on PATH, else grep."""
    search_path = os.environ.get("PATH")
    for name in ("rg", "grep"):
        exe = _which(name, search_path)
        if exe:
            return name, exe
    return None


def rg_argv(exe: str, pattern: str, root: str) -> list[str]:
    # "dir/" (not "dir") so that only directories are excluded, as grep's --exclude-dir does.
    globs = [arg for d in EXCLUDED_DIRS for arg in ("-g", f"!{d}/")]
    return [
        exe, "-n", "-H", "--no-heading", "--color=never", "--no-config", "--no-messages",
        "--max-count", str(MAX_PER_FILE), "--max-columns", str(MAX_COLUMNS),
        "--max-columns-preview", "--max-filesize", "10M", *globs, "-e", pattern, "--", root,
    ]  # fmt: skip


def grep_argv(exe: str, pattern: str, root: str) -> list[str]:
    # grep skips a *command-line* directory matching --exclude-dir; ripgrep searches
    # an explicit root whatever its name, so leave out the globs that match the root.
    name = Path(root).name
    excludes = [f"--exclude-dir={d}" for d in EXCLUDED_DIRS if not _is_excluded_dir(name, d)]
    return [
        exe, "-rn", "-H", "-I", "-E", "-m", str(MAX_PER_FILE), "--color=never", *excludes,
        "--", pattern, root,
    ]  # fmt: skip


def _is_excluded_dir(name: str, pattern: str) -> bool:
    return name.endswith(pattern[1:]) if pattern.startswith("*") else name == pattern


def rg_would_visit(path: str, root: str) -> bool:
    """False for grep hits ripgrep skips: hidden entries or excluded directories below root."""
    rel = path.removeprefix(root)
    parts = [p for p in rel.split("/") if p and p not in (".", "..")]
    if any(p.startswith(".") for p in parts):
        return False
    return not any(_is_excluded_dir(p, d) for p in parts[:-1] for d in EXCLUDED_DIRS)


def _env(ctx: ToolContext, name: str) -> dict[str, str]:
    base = _scrubbed(os.environ, ctx.env.settings.env_passthrough)
    if name == "grep":
        base["LC_ALL"] = "C"  # bytes in, bytes out: no "binary file matches" on non-UTF-8 text
    return base


def _scrubbed(environ: Mapping[str, str], passthrough: tuple[str, ...]) -> dict[str, str]:
    try:
        from turnstoned.envscrub import scrub_env
    except ImportError:
        suffixes = ("_KEY", "_SECRET", "_TOKEN", "_PASSWORD")
        return {k: v for k, v in environ.items() if not k.upper().endswith(suffixes)}
    return scrub_env(environ, passthrough=passthrough)


# -- running -------------------------------------------------------------------------


def _kill(proc: subprocess.Popen[bytes]) -> None:
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)


def _pump(proc: subprocess.Popen[bytes]) -> _Raw:
    """Read both pipes to EOF (stdout capped: the child is killed past the cap), then reap.

    Runs in its own thread: blocking reads cost far less per chunk than event-loop
    wake-ups, and ripgrep writes many small chunks.
    """
    assert proc.stdout is not None and proc.stderr is not None
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    buffers = {out_fd: bytearray(), err_fd: bytearray()}
    caps = {out_fd: STDOUT_CAP, err_fd: STDERR_CAP}
    capped = False
    with selectors.DefaultSelector() as selector:
        for fd in buffers:
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map():
            for key, _ in selector.select():
                chunk = os.read(key.fd, _READ_CHUNK)
                if not chunk:
                    selector.unregister(key.fd)
                elif len(buffers[key.fd]) <= caps[key.fd]:
                    buffers[key.fd] += chunk
                if key.fd == out_fd and not capped and len(buffers[out_fd]) > STDOUT_CAP:
                    capped = True
                    _kill(proc)
    rc = proc.wait()
    proc.stdout.close()
    proc.stderr.close()
    out = bytes(buffers[out_fd][:STDOUT_CAP])
    if capped:
        out = out[: out.rfind(b"\n") + 1]
    return _Raw(rc, out, bytes(buffers[err_fd][:STDERR_CAP]), capped)


async def run(
    argv: list[str], cwd: Path, env: dict[str, str], timeout: float, cancel: asyncio.Event
) -> _Raw:
    """Run the backend; raises TimeoutError or _Stopped. The child never outlives this."""
    # Popen, not asyncio's: its pipes are read by selectors in a thread (fork is quick).
    proc = subprocess.Popen(  # noqa: ASYNC220
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        # Its own process group so the kill reaches everything it starts; not a new
        # session, which under sched_autogroup would also make it a new CPU-share group.
        process_group=0,
    )
    loop = asyncio.get_running_loop()
    result: asyncio.Future[_Raw] = loop.create_future()

    def pump() -> None:
        outcome: _Raw | OSError
        try:
            outcome = _pump(proc)
        except OSError as exc:
            outcome = exc
        with contextlib.suppress(RuntimeError):  # the loop may be closed by now
            loop.call_soon_threadsafe(_settle, result, outcome)

    threading.Thread(target=pump, name="search-pump", daemon=True).start()
    stopper = asyncio.ensure_future(cancel.wait())
    try:
        waiters: set[asyncio.Future[Any]] = {result, stopper}
        done, _ = await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        if result in done:
            return result.result()
        raise _Stopped() if stopper in done else TimeoutError()
    finally:
        stopper.cancel()
        result.cancel()  # a late outcome from the pump is dropped, not left unretrieved
        _kill(proc)  # synchronous, so even a cancelled task leaves no child behind; the pump reaps


def _settle(future: asyncio.Future[_Raw], outcome: _Raw | OSError) -> None:
    if future.done():
        return
    if isinstance(outcome, OSError):
        future.set_exception(outcome)
    else:
        future.set_result(outcome)


# -- parsing and formatting --------------------------------------------------------


def parse(out: bytes) -> tuple[list[Record], int]:
    """``path:line:content`` records sorted by path and line, and how many other lines came.

    ripgrep's "binary file matches" notices are dropped without counting.
    """
    records: list[Record] = []
    stray = 0
    for line in out.decode("utf-8", errors="replace").split("\n"):
        path, _, rest = line.partition(":")
        number, found, body = rest.partition(":")
        if not (path and found and number.isascii() and number.isdigit()):
            stray += bool(line.strip()) and "binary file matches" not in line
            continue
        body = body.removesuffix("\r")
        if body.endswith(_RG_OMITTED):
            body = body[: -len(_RG_OMITTED)][:MAX_COLUMNS] + _CUT
        elif len(body) >= MAX_COLUMNS // 4 and len(body.encode()) >= MAX_COLUMNS:
            body = body[:MAX_COLUMNS] + _CUT
        records.append((path, int(number), body))
    records.sort()  # (path, line, text) tuples: path, then line
    return records, stray


def _by_file(records: list[Record]) -> dict[str, list[str]]:
    files: dict[str, list[str]] = {}
    for path, line, text in records:
        files.setdefault(path, []).append(f"{path}:{line}:{text}")
    return files


def _per_file(files: dict[str, list[str]], total: int, note: str, budget: int) -> str | None:
    lines = [line for group in files.values() for line in group]
    average = sum(len(line) for line in lines) / max(1, len(lines))
    estimate = budget / (len(files) * max(80.0, average))
    for k in (rung for rung in LADDER if rung <= max(1.0, estimate)):
        out = [
            (f"({total} matches across {len(files)} files — showing first {k}/file. Narrow "
            f"the query or read_file a specific path for full content.){note}")
        ]
        for path, group in files.items():
            out += group[:k]
            if len(group) > k:
                out.append(f"  ...and {len(group) - k} more in {path}")
        text = "\n".join(out)
        if len(text) <= budget:
            return text
    return None


def _counts_only(files: dict[str, list[str]], total: int, note: str, budget: int) -> str:
    out = [
        (f"({total} matches across {len(files)} files — too many to show inline. Counts only, "
        f"most matches first; narrow the query or restrict the path.){note}")
    ]
    size = len(out[0])
    ranked = sorted(files.items(), key=lambda item: (-len(item[1]), item[0]))
    for shown, (path, group) in enumerate(ranked):
        line = f"{path}: {len(group)} matches"
        if size + len(line) + 1 > budget - 80:
            rest = ranked[shown:]
            count = sum(len(g) for _, g in rest)
            out.append(f"(plus {len(rest)} more files with {count} matches between them)")
            break
        out.append(line)
        size += len(line) + 1
    return "\n".join(out)


def format_results(records: list[Record], capped: bool, budget: int = BUDGET) -> tuple[str, int]:
    """The model-facing text and which tier of the ladder produced it (1, 2 or 3)."""
    files = _by_file(records)
    total = len(records)
    note = " (raw output exceeded byte cap; results may be incomplete)" if capped else ""
    full = "\n".join(line for group in files.values() for line in group)
    full += f"\n\n({total} matches across {len(files)} files){note}"
    if len(full) <= budget:
        return full, 1
    text = _per_file(files, total, note, budget)
    if text is not None:
        return text, 2
    return _counts_only(files, total, note, budget), 3


# -- execute ------------------------------------------------------------------------------


def _error(text: str) -> ToolOutput:
    return ToolOutput(content=text, is_error=True)


def _interpret(name: str, raw: _Raw, parsed: tuple[list[Record], int], budget: int) -> ToolOutput:
    records, stray = parsed
    rc = 0 if raw.capped and raw.rc < 0 else raw.rc
    if rc < 0:
        return _error(f"{name} killed by signal {-rc}")
    stderr = raw.err.decode("utf-8", errors="replace").strip()
    if rc >= 2 and not records:
        return _error(stderr or f"{name} error (exit {rc})")
    if not records:
        if raw.capped:
            return _error(
                "(search output exceeded the raw byte cap before any parseable line completed "
                "— narrow your query or restrict the path)"
            )
        if stray:
            return _error(
                "(all matches returned were malformed -- no line had the path:line:content "
                "shape; narrow the query or restrict the path)"
            )
        return ToolOutput(content="(no matches)", summary="no matches")
    text, tier = format_results(records, raw.capped, budget)
    if rc >= 2:
        first = stderr.splitlines()[0] if stderr else f"{name} exit {rc}"
        text += f"\n(some files could not be searched; results may be incomplete: {first})"
    summary = f"{len(records)} matches"
    summary += f" ({len(raw.out)} bytes raw)" if tier > 1 else ""
    summary += " [capped]" if raw.capped else ""
    return ToolOutput(content=text, summary=summary)


async def execute(call: PreparedCall, ctx: ToolContext) -> ToolOutput:
    search: _Search = call.data
    chosen = backend()
    if chosen is None:
        return _error("Error: neither rg nor grep is available on PATH")
    name, exe = chosen
    argv = (rg_argv if name == "rg" else grep_argv)(exe, search.query, search.root)
    timeout = ctx.env.settings.timeout
    try:
        raw = await run(argv, search.cwd, _env(ctx, name), timeout, ctx.cancel)
    except TimeoutError:
        return _error(f"Search timed out after {timeout}s")
    except _Stopped:
        return _error("Search cancelled")
    except OSError as exc:
        return _error(f"Error: could not run {name}: {exc}")
    records, stray = parse(raw.out)
    if name == "grep":
        records = [r for r in records if rg_would_visit(r[0], search.root)]
    records, unsaved = _with_buffers(records, search, ctx.env.buffers)
    out = _interpret(name, raw, (records, stray), min(BUDGET, ctx.env.output_cap()))
    if unsaved and not out.is_error and isinstance(out.content, str):
        out = replace(out, content=out.content + "\n(searched the editor's unsaved text of: "
                      + ", ".join(unsaved) + ")")
    return out


def _with_buffers(records: list[Record], search: _Search,
                  buffers: Mapping[str, str]) -> tuple[list[Record], list[str]]:
    """``records`` with the hits in files that have unsaved editor buffers found in those
    buffers instead of on disk (Python's regex syntax, which ripgrep's mostly shares; a
    pattern it cannot read keeps the disk's hits). Also the buffers searched."""
    if not buffers:
        return records, []
    try:
        pattern = re.compile(search.query)
    except re.error:
        return records, []
    root = os.path.realpath(search.cwd / search.root)
    inside = {path: text for path, text in buffers.items()
              if (path == root or path.startswith(root.rstrip(os.sep) + os.sep))
              and rg_would_visit(os.path.relpath(path, root), ".")}
    if not inside:
        return records, []

    def real(shown: str) -> str:
        return os.path.realpath(search.cwd / shown)

    kept = [r for r in records if real(r[0]) not in inside]
    shown_names = []
    for path, text in sorted(inside.items()):
        shown = search.root if path == root else os.path.join(search.root,
                                                               os.path.relpath(path, root))
        shown_names.append(shown)
        kept += [(shown, n, line[:MAX_COLUMNS] + (_CUT if len(line) > MAX_COLUMNS else ""))
                 for n, line in enumerate(text.split("\n"), 1) if pattern.search(line)]
    kept.sort()
    return kept, shown_names
