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
import shutil
import signal
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import msgspec

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
_RG_OMITTED = b" [... omitted end of long line]"
_CUT = "...[truncated, line length > 1024]"
_REAP_TIMEOUT = 5.0

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
    return PreparedCall(
        header=f"⚙ search: {args.query} in {display}",
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
    rel = path[len(root) :] if path.startswith(root) else path
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


def _kill(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)


async def _read_capped(
    stream: asyncio.StreamReader, cap: int, *, drain: bool
) -> tuple[bytes, bool]:
    chunks: list[bytes] = []
    size = 0
    while chunk := await stream.read(1 << 16):
        if size < cap:
            chunks.append(chunk)
        size += len(chunk)
        if size > cap and not drain:
            return b"".join(chunks)[:cap], True
    return b"".join(chunks)[:cap], size > cap


async def _collect(proc: asyncio.subprocess.Process) -> _Raw:
    assert proc.stdout is not None and proc.stderr is not None
    err_task = asyncio.ensure_future(_read_capped(proc.stderr, STDERR_CAP, drain=True))
    try:
        out, capped = await _read_capped(proc.stdout, STDOUT_CAP, drain=False)
        if capped:
            _kill(proc)
        err, _ = await err_task
    finally:
        err_task.cancel()
    rc = await proc.wait()
    return _Raw(rc, out, err, capped)


async def run(
    argv: list[str], cwd: Path, env: dict[str, str], timeout: float, cancel: asyncio.Event
) -> _Raw:
    """Run the backend; raises TimeoutError or _Stopped. The child never outlives this."""
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    collector = asyncio.ensure_future(_collect(proc))
    stopper = asyncio.ensure_future(cancel.wait())
    try:
        done, _ = await asyncio.wait(
            {collector, stopper}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
        )
        if collector in done:
            return collector.result()
        raise _Stopped() if stopper in done else TimeoutError()
    finally:
        stopper.cancel()
        _kill(proc)  # synchronous, so even a cancelled task leaves no child behind
        collector.cancel()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(proc.wait()), _REAP_TIMEOUT)


# -- parsing and formatting --------------------------------------------------------


def parse(out: bytes) -> tuple[list[Record], int]:
    """``path:line:content`` records sorted by path and line, and how many other lines came.

    ripgrep's "binary file matches" notices are dropped without counting.
    """
    records: list[Record] = []
    stray = 0
    for raw in out.split(b"\n"):
        first = raw.find(b":")
        second = raw.find(b":", first + 1) if first > 0 else -1
        if second < 0 or not raw[first + 1 : second].isdigit():
            stray += bool(raw.strip()) and b"binary file matches" not in raw
            continue
        body = raw[second + 1 :]
        if body.endswith(b"\r"):
            body = body[:-1]
        long = len(body) >= MAX_COLUMNS
        if body.endswith(_RG_OMITTED):
            body, long = body[: -len(_RG_OMITTED)], True
        text = body.decode("utf-8", errors="replace")
        if long:
            text = text[:MAX_COLUMNS] + _CUT
        path = raw[:first].decode("utf-8", errors="replace")
        records.append((path, int(raw[first + 1 : second]), text))
    records.sort(key=lambda r: (r[0], r[1]))
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
            f"({total} matches across {len(files)} files — showing first {k}/file. Narrow "
            f"the query or read_file a specific path for full content.){note}"
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
        f"({total} matches across {len(files)} files — too many to show inline. Counts only, "
        f"most matches first; narrow the query or restrict the path.){note}"
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
    return _interpret(name, raw, (records, stray), min(BUDGET, ctx.env.output_cap()))
