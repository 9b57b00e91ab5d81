"""search with real ripgrep and grep processes over real trees in tmp dirs."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.tooling import prepare, run_auto, tool_ctx
from turnstoned.tools import search
from turnstoned.tools.base import PreparedCall, ToolContext, ToolOutput

HAVE_RG = shutil.which("rg") is not None
needs_rg = pytest.mark.skipif(not HAVE_RG, reason="ripgrep is not installed")


def prep(ctx: ToolContext, **args: Any) -> PreparedCall:
    return prepare(search, ctx, **args)


async def run(ctx: ToolContext, **args: Any) -> ToolOutput:
    return await run_auto(search, ctx, **args)


@pytest.fixture
def grep_only(tmp_path_factory: pytest.TempPathFactory) -> Callable[[], Any]:
    """A context manager factory that hides rg by pointing PATH at a dir holding only grep."""
    grep = shutil.which("grep")
    assert grep is not None
    bindir = tmp_path_factory.mktemp("grep-only-bin")
    (bindir / "grep").symlink_to(grep)

    @contextlib.contextmanager
    def hide() -> Iterator[None]:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("PATH", str(bindir))
            yield

    return hide


async def both(
    ctx: ToolContext, hide: Callable[[], Any], **args: Any
) -> tuple[ToolOutput, ToolOutput]:
    assert search.backend() == ("rg", shutil.which("rg"))
    with_rg = await run(ctx, **args)
    with hide():
        assert search.backend() is not None and search.backend()[0] == "grep"  # type: ignore[index]
        with_grep = await run(ctx, **args)
    return with_rg, with_grep


def write(root: Path, files: dict[str, str | bytes]) -> None:
    for name, body in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(body, bytes):
            path.write_bytes(body)
        else:
            path.write_text(body)


# -- output ---------------------------------------------------------------------------------------


async def test_matches_are_sorted_by_path_then_line(tmp_path: Path) -> None:
    write(tmp_path, {"b.py": "x\nfoo = 2\n", "a.py": "foo\nbar\nfoo again\n", "c.py": "nothing\n"})
    out = await run(tool_ctx(tmp_path), query="foo")
    assert (
        out.content
        == "./a.py:1:foo\n./a.py:3:foo again\n./b.py:2:foo = 2\n\n(3 matches across 2 files)"
    )
    assert out.summary == "3 matches" and not out.is_error


async def test_no_matches(tmp_path: Path) -> None:
    write(tmp_path, {"a.txt": "hello\n"})
    out = await run(tool_ctx(tmp_path), query="absent", path="a.txt")
    assert out.content == "(no matches)" and not out.is_error


def test_prepare_errors(tmp_path: Path) -> None:
    ctx = tool_ctx(tmp_path)
    assert prep(ctx, query="").error == "Error: missing query"
    assert prep(ctx, query="x", path="nowhere").error == "Error: nowhere not found"


def test_arguments_can_never_become_flags() -> None:
    rg = search.rg_argv("rg", "-pattern", "--pre=cmd")
    assert rg[-4:] == ["-e", "-pattern", "--", "--pre=cmd"] and "--no-config" in rg
    grep = search.grep_argv("grep", "-pattern", "--pre=cmd")
    assert grep[-3:] == ["--", "-pattern", "--pre=cmd"] and "-H" in grep


# -- both backends --------------------------------------------------------------------------------

TREE: dict[str, str | bytes] = {
    "src/app.py": "def needle():\n    return 'needle'\n",
    "src/build": "needle in a file named build\n",
    "src/win.txt": b"needle\r\nother\r\n",
    "long.txt": "needle " + "x" * 3000 + "\n",
    "wide.txt": "needle " + "\u00e9" * 1500 + "\n",
    "blob.bin": b"needle\0binary\n",
    ".hidden/secret.txt": "needle\n",
    "build/out.txt": "needle\n",
    "build/sub/deep.txt": "needle\n",
    "build/build/nested.txt": "needle\n",
    "node_modules/pkg/index.js": "needle\n",
    "pkg.egg-info/PKG-INFO": "needle\n",
    "many.txt": "needle\n" * 150,
    "--pre=cmd/inside.txt": "needle\n",
    "dash.txt": "-e marks the spot\n",
}


@needs_rg
@pytest.mark.parametrize(
    ("query", "path"),
    [("needle", "."), ("needle", "src"), ("needle", "build"), ("needle", "src/app.py"),
     ("ne+dle", "--pre=cmd"), ("-e", "."), ("^def [a-z]+", "."), ("nothing-here", ".")],
)  # fmt: skip
async def test_rg_and_grep_give_the_same_output(
    tmp_path: Path, grep_only: Callable[[], Any], query: str, path: str
) -> None:
    write(tmp_path, TREE)
    with_rg, with_grep = await both(tool_ctx(tmp_path), grep_only, query=query, path=path)
    assert with_rg.content == with_grep.content
    assert with_rg.is_error == with_grep.is_error is False


@needs_rg
async def test_what_both_backends_skip_and_keep(
    tmp_path: Path, grep_only: Callable[[], Any]
) -> None:
    write(tmp_path, TREE)
    for out in await both(tool_ctx(tmp_path), grep_only, query="needle"):
        text = out.text()
        assert "./src/build:1:" in text  # a *file* named like an excluded dir is searched
        for skipped in (".hidden", "./build/", "node_modules", "egg-info", "blob.bin"):
            assert skipped not in text
        assert "./src/win.txt:1:needle\n" in text  # CR not shown
        assert f"./long.txt:1:needle {'x' * 1017}...[truncated, line length > 1024]" in text
        assert text.count("./many.txt:") == 100  # per-file cap
    for out in await both(tool_ctx(tmp_path), grep_only, query="needle", path="build"):
        assert out.content == (  # an excluded root is searched, excluded dirs below it are not
            "build/out.txt:1:needle\nbuild/sub/deep.txt:1:needle\n\n(2 matches across 2 files)"
        )


@needs_rg
async def test_a_dashed_path_and_query_are_searched_not_obeyed(
    tmp_path: Path, grep_only: Callable[[], Any]
) -> None:
    write(tmp_path, TREE)
    ctx = tool_ctx(tmp_path)
    for out in await both(ctx, grep_only, query="needle", path="--pre=cmd"):
        assert out.content == "--pre=cmd/inside.txt:1:needle\n\n(1 matches across 1 files)"
    for out in await both(ctx, grep_only, query="-e", path="dash.txt"):
        assert out.content == "dash.txt:1:-e marks the spot\n\n(1 matches across 1 files)"


@needs_rg
async def test_invalid_regex_is_an_error_from_either_backend(
    tmp_path: Path, grep_only: Callable[[], Any]
) -> None:
    write(tmp_path, {"a.txt": "x\n"})
    with_rg, with_grep = await both(tool_ctx(tmp_path), grep_only, query="(unclosed")
    assert with_rg.is_error and "regex" in with_rg.text()
    assert with_grep.is_error and "Unmatched" in with_grep.text()


@needs_rg
async def test_ripgrep_respects_gitignore(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    write(
        tmp_path, {".gitignore": "ignored.txt\n", "ignored.txt": "needle\n", "kept.txt": "needle\n"}
    )
    out = await run(tool_ctx(tmp_path), query="needle")
    assert out.content == "./kept.txt:1:needle\n\n(1 matches across 1 files)"


async def test_grep_is_used_when_rg_is_missing(
    tmp_path: Path, grep_only: Callable[[], Any]
) -> None:
    write(tmp_path, {"a.txt": "needle\n"})
    with grep_only():
        assert search.backend() == ("grep", str(Path(os.environ["PATH"]) / "grep"))
        out = await run(tool_ctx(tmp_path), query="needle", path="a.txt")
    assert out.content == "a.txt:1:needle\n\n(1 matches across 1 files)"


# -- the formatting ladder ------------------------------------------------------------------------


async def test_tier_two_shows_the_first_matches_per_file(tmp_path: Path) -> None:
    write(
        tmp_path,
        {f"f{i:02}.txt": "".join(f"hit {j} {'y' * 90}\n" for j in range(50)) for i in range(30)},
    )
    out = await run(tool_ctx(tmp_path), query="hit")
    text = out.text()
    assert text.startswith(
        "(1500 matches across 30 files — showing first 5/file. Narrow the query or read_file "
        "a specific path for full content.)"
    )
    assert "  ...and 45 more in ./f00.txt" in text
    assert text.count("./f07.txt:") == 5 and len(text) <= search.BUDGET
    assert out.summary is not None and out.summary.startswith("1500 matches (")


def test_tier_one_fits_everything() -> None:
    records = [("a.py", 1, "x"), ("b.py", 2, "y")]
    assert search.format_results(records, capped=False) == (
        "a.py:1:x\nb.py:2:y\n\n(2 matches across 2 files)",
        1,
    )


def test_tier_three_counts_only_most_matches_first() -> None:
    records = [(f"dir/file{i:04}.py", 1, "z" * 100) for i in range(2000)]
    records += [("dir/hot.py", n, "z") for n in range(1, 8)]
    text, tier = search.format_results(records, capped=True)
    lines = text.splitlines()
    assert tier == 3 and len(text) <= search.BUDGET
    assert lines[0].startswith(
        "(2007 matches across 2001 files — too many to show inline. Counts only"
    )
    assert lines[0].endswith("(raw output exceeded byte cap; results may be incomplete)")
    assert lines[1] == "dir/hot.py: 7 matches"
    assert lines[2] == "dir/file0000.py: 1 matches"
    shown = len(lines) - 3
    assert lines[-1] == f"(plus {2000 - shown} more files with {2000 - shown} matches between them)"


def test_lines_without_path_and_number_are_dropped() -> None:
    records, stray = search.parse(b"a.py:3:ok\nno colon here\nb.py:x:bad\n\n")
    assert records == [("a.py", 3, "ok")] and stray == 2


async def test_output_over_the_byte_cap_is_marked(tmp_path: Path) -> None:
    line = "cap " + "w" * 990 + "\n"
    write(tmp_path, {f"d/f{i:02}.txt": line * 100 for i in range(45)})
    out = await run(tool_ctx(tmp_path), query="cap")
    assert not out.is_error
    assert out.summary is not None and out.summary.endswith("[capped]")
    assert "(raw output exceeded byte cap; results may be incomplete)" in out.text()


# -- time bounds and cancellation -----------------------------------------------------------------


def pids_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


async def wait_until(check: Callable[[], bool], seconds: float = 5.0) -> bool:
    async with asyncio.timeout(seconds):
        while not check():
            await asyncio.sleep(0.02)
    return True


async def test_a_search_that_never_ends_times_out(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "stuck-fifo")
    out = await run(tool_ctx(tmp_path, timeout=1), query="x", path="stuck-fifo")
    assert out.is_error and out.content == "Search timed out after 1s"
    await wait_until(lambda: not pids_with(str(tmp_path / "stuck-fifo")))


async def test_cancelling_the_task_kills_the_child(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "cancel-fifo")
    ctx = tool_ctx(tmp_path, timeout=60)
    task = asyncio.create_task(run(ctx, query="x", path=str(tmp_path / "cancel-fifo")))
    await wait_until(lambda: bool(pids_with(str(tmp_path / "cancel-fifo"))))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await wait_until(lambda: not pids_with(str(tmp_path / "cancel-fifo")))


async def test_the_session_cancel_event_stops_the_search(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "stop-fifo")
    ctx = tool_ctx(tmp_path, timeout=60)
    task = asyncio.create_task(run(ctx, query="x", path=str(tmp_path / "stop-fifo")))
    await wait_until(lambda: bool(pids_with(str(tmp_path / "stop-fifo"))))
    ctx.cancel.set()
    out = await task
    assert out.is_error and out.content == "Search cancelled"
    await wait_until(lambda: not pids_with(str(tmp_path / "stop-fifo")))
