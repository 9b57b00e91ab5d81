"""diff_file against real files: sides, context, errors, truncation, the read set."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgspec
import pytest

from tests.tooling import prepare, run_auto, tool_ctx
from turnstoned.tools import diff_file, edit_file
from turnstoned.tools.base import PreparedCall, ToolContext, ToolOutput


def prep(ctx: ToolContext, **args: Any) -> PreparedCall:
    return prepare(diff_file, ctx, **args)


async def run(ctx: ToolContext, **args: Any) -> ToolOutput:
    return await run_auto(diff_file, ctx, **args)


def numbered(n: int, changed: dict[int, str] | None = None) -> str:
    changed = changed or {}
    return "".join(changed.get(i, f"line {i}") + "\n" for i in range(1, n + 1))


async def test_two_files(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\ntwo\nthree\n")
    (tmp_path / "b.txt").write_text("one\n2\nthree\n")
    out = await run(tool_ctx(tmp_path), path_a="a.txt", path_b="b.txt")
    assert out.content == "--- a.txt\n+++ b.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three"
    assert out.summary == "7 diff lines" and not out.is_error


async def test_content_b_is_the_old_side(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("new line\n")
    out = await run(tool_ctx(tmp_path), path_a="a.txt", content_b="old line\n")
    assert out.content == "--- (provided content)\n+++ a.txt\n@@ -1 +1 @@\n-old line\n+new line"


async def test_identical(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("same\n")
    out = await run(tool_ctx(tmp_path), path_a="a.txt", content_b="same\n")
    assert out.content == "(no differences)" and out.summary == "identical"


async def test_line_ending_only_difference_is_named(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"x\ny\n")
    (tmp_path / "b.txt").write_bytes(b"x\r\ny\r\n")
    out = await run(tool_ctx(tmp_path), path_a="a.txt", path_b="b.txt")
    assert out.text().startswith("(no differences") and "line endings" in out.content


@pytest.mark.parametrize(
    ("context", "expected"), [(None, 3), (1, 1), (0, 0), (25, 20), (-4, 0), ("abc", 3), ("2", 2)]
)
async def test_context_lines_default_and_clamp(tmp_path: Path, context: Any, expected: int) -> None:
    (tmp_path / "a.txt").write_text(numbered(60))
    args: dict[str, Any] = {"path_a": "a.txt", "content_b": numbered(60, {30: "changed"})}
    if context is not None:
        args["context_lines"] = context
    out = await run(tool_ctx(tmp_path), **args)
    context_lines = [line for line in out.text().splitlines() if line.startswith(" ")]
    assert len(context_lines) == 2 * expected


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({}, "Error: path_a is required"),
        (
            {"path_a": "a", "path_b": "b", "content_b": ""},
            "Error: provide path_b or content_b, not both",
        ),
        (
            {"path_a": "a"},
            "Error: provide path_b (another file) or content_b (string to compare against)",
        ),
    ],
)
def test_argument_errors(tmp_path: Path, args: dict[str, Any], message: str) -> None:
    assert prep(tool_ctx(tmp_path), **args).error == message


async def test_binary_and_missing_files_use_read_file_texts(tmp_path: Path) -> None:
    (tmp_path / "blob").write_bytes(b"\0\1")
    (tmp_path / "a.txt").write_text("x\n")
    ctx = tool_ctx(tmp_path)
    out = await run(ctx, path_a="a.txt", path_b="blob")
    assert out.is_error and out.content == (
        "Error: blob appears to be a binary file (contains null bytes). "
        "Use bash to inspect binary files."
    )
    missing = await run(ctx, path_a="nope.txt", content_b="")
    assert missing.is_error and missing.content == "Error: nope.txt not found"
    assert ctx.env.read_set == set()


async def test_both_files_satisfy_the_edit_guard(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    (tmp_path / "b.txt").write_text("beta\n")
    ctx = tool_ctx(tmp_path)
    await run(ctx, path_a="a.txt", path_b="b.txt")
    assert ctx.env.read_set == {os.path.realpath(tmp_path / n) for n in ("a.txt", "b.txt")}
    for name, old in (("a.txt", "alpha"), ("b.txt", "beta")):
        args = {"path": name, "old_string": old, "new_string": "x"}
        assert edit_file.prepare(msgspec.convert(args, edit_file.Args), ctx).error is None


async def test_a_large_diff_is_cut_but_still_counted(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("".join(f"old {i}\n" for i in range(5000)))
    (tmp_path / "b.txt").write_text("".join(f"new {i}\n" for i in range(5000)))
    out = await run(tool_ctx(tmp_path, truncation=2000), path_a="a.txt", path_b="b.txt")
    assert len(out.text()) < 2200
    assert out.text().endswith("of 10003 diff lines shown — output exceeded 2000 char limit]")
    assert out.summary == "10003 diff lines"


async def test_missing_final_newline_is_marked(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x\ny")
    out = await run(tool_ctx(tmp_path), path_a="a.txt", content_b="x\ny\n")
    assert out.content == (
        "--- (provided content)\n+++ a.txt\n@@ -1,2 +1,2 @@\n x\n-y\n+y\n"
        "\\ No newline at end of file"
    )
