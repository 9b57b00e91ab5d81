"""read_file against real files: numbering, windows, binary, images, read set, big files."""

from __future__ import annotations

import base64
import os
import random
from pathlib import Path
from typing import Any

import pytest

from tests.tooling import prepare, run_auto, tool_ctx
from turnstoned.tools import read_file
from turnstoned.tools.base import (
    PreparedCall,
    ToolContext,
    ToolOutput,
    truncate_middle,
)

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def prep(ctx: ToolContext, **args: Any) -> PreparedCall:
    return prepare(read_file, ctx, **args)


async def run(ctx: ToolContext, **args: Any) -> ToolOutput:
    return await run_auto(read_file, ctx, **args)


async def test_lines_are_numbered_width_four_then_a_tab(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("import os\n\nprint(os.sep)\n")
    out = await run(tool_ctx(tmp_path), path="a.py")
    assert out.content == "   1\timport os\n   2\t\n   3\tprint(os.sep)"
    assert out.summary == "3 lines" and not out.is_error


async def test_trailing_whitespace_and_crlf_are_not_shown(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"x = 1   \r\n\ty\t\r\nlast")
    out = await run(tool_ctx(tmp_path), path="a.txt")
    assert out.content == "   1\tx = 1\n   2\t\ty\n   3\tlast"


async def test_offset_and_limit_select_a_window(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("".join(f"l{i}\n" for i in range(1, 11)))
    out = await run(tool_ctx(tmp_path), path="a.txt", offset=4, limit=3)
    assert out.content == "   4\tl4\n   5\tl5\n   6\tl6"
    assert out.summary == "3 lines (lines 4-6 of 10)"
    tail = await run(tool_ctx(tmp_path), path="a.txt", offset="9")
    assert tail.content == "   9\tl9\n  10\tl10"


async def test_offset_past_the_end_and_empty_files(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\n")
    (tmp_path / "empty.txt").write_text("")
    assert (await run(tool_ctx(tmp_path), path="a.txt", offset=5)).content == "(empty file)"
    assert (await run(tool_ctx(tmp_path), path="empty.txt")).content == "(empty file)"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"path": ""}, "Error: missing path"),
        (
            {"path": "a", "offset": "abc"},
            "Error: offset/limit must be integers (got offset='abc', limit=None)",
        ),
        ({"path": "a", "offset": 0}, "Error: offset must be >= 1 (got 0)"),
        ({"path": "a", "limit": -2}, "Error: limit must be >= 1 (got -2)"),
    ],
)
def test_argument_errors_at_prepare(tmp_path: Path, args: dict[str, Any], message: str) -> None:
    ctx = tool_ctx(tmp_path)
    assert prep(ctx, **args).error == message
    assert ctx.env.read_set == set()


async def test_missing_file_is_an_error_and_leaves_the_read_set(tmp_path: Path) -> None:
    ctx = tool_ctx(tmp_path)
    call = prep(ctx, path="nope.txt")
    assert str(tmp_path / "nope.txt") in ctx.env.read_set  # marked at prepare
    out = await read_file.execute(call, ctx)
    assert out.is_error and out.content == "Error: nope.txt not found"
    assert ctx.env.read_set == set()


async def test_failed_reread_keeps_an_earlier_successful_read(tmp_path: Path) -> None:
    ctx = tool_ctx(tmp_path)
    (tmp_path / "a.txt").write_text("x\n")
    await run(ctx, path="a.txt")
    call = prep(ctx, path="a.txt")
    (tmp_path / "a.txt").write_bytes(b"\0\0")
    out = await read_file.execute(call, ctx)
    assert out.is_error and str(tmp_path / "a.txt") in ctx.env.read_set


async def test_binary_files_are_refused(tmp_path: Path) -> None:
    (tmp_path / "blob.bin").write_bytes(b"ELF\0\1\2" + b"x" * 100)
    out = await run(tool_ctx(tmp_path), path="blob.bin")
    assert out.is_error
    assert out.content == (
        "Error: blob.bin appears to be a binary file (contains null bytes). "
        "Use bash to inspect binary files."
    )


async def test_directories_are_refused(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    out = await run(tool_ctx(tmp_path), path="d")
    assert out.is_error and "is a directory" in out.content


async def test_read_set_records_the_real_path_of_a_symlink(tmp_path: Path) -> None:
    (tmp_path / "real.txt").write_text("x\n")
    (tmp_path / "link.txt").symlink_to("real.txt")
    ctx = tool_ctx(tmp_path)
    out = await run(ctx, path="link.txt")
    assert not out.is_error
    assert ctx.env.read_set == {os.path.realpath(tmp_path / "real.txt")}


async def test_image_without_vision_is_described(tmp_path: Path) -> None:
    (tmp_path / "pic.png").write_bytes(PNG)
    out = await run(tool_ctx(tmp_path), path="pic.png")
    assert out.content == (
        f"Binary image file: pic.png ({len(PNG)} bytes). Current model does not support vision."
    )
    assert not out.is_error


async def test_image_with_vision_is_returned_as_content_parts(tmp_path: Path) -> None:
    (tmp_path / "pic.JPG").write_bytes(PNG)
    out = await run(tool_ctx(tmp_path, supports_vision=True), path="pic.JPG")
    assert isinstance(out.content, list)
    text, image = out.content
    assert text == {"type": "text", "text": f"Image file: pic.JPG ({len(PNG)} bytes)"}
    assert image["type"] == "image_url"
    url = image["image_url"]["url"]
    assert url.startswith("data:image/jpeg;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == PNG
    assert out.summary == f"image ({len(PNG)} bytes)"


async def test_oversized_image_is_refused_for_vision(tmp_path: Path) -> None:
    (tmp_path / "big.webp").write_bytes(b"R" * (5 * 1024 * 1024))
    ctx = tool_ctx(tmp_path, supports_vision=True)
    out = await run(ctx, path="big.webp")
    assert out.is_error
    assert out.content == "Error: image big.webp is 5.0 MB, exceeds 4 MB limit for vision."
    assert ctx.env.read_set == set()


async def test_svg_is_text(tmp_path: Path) -> None:
    (tmp_path / "i.svg").write_text("<svg/>\n")
    out = await run(tool_ctx(tmp_path, supports_vision=True), path="i.svg")
    assert out.content == "   1\t<svg/>"


async def test_a_long_file_is_cut_in_the_middle_like_truncate_middle(tmp_path: Path) -> None:
    lines = [f"row {i} " + "x" * (i % 50) for i in range(1, 20_001)]
    (tmp_path / "big.txt").write_text("\n".join(lines) + "\n")
    out = await run(tool_ctx(tmp_path, truncation=5000), path="big.txt")
    full = "\n".join(f"{i:>4}\t{line.rstrip()}" for i, line in enumerate(lines, 1))
    assert out.content == truncate_middle(full, 5000)
    assert out.summary == "20000 lines"


async def test_a_window_of_a_long_file_counts_all_its_lines(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("".join(f"{i}\n" for i in range(1, 100_001)) + "tail")
    out = await run(tool_ctx(tmp_path), path="big.txt", offset=50_000, limit=2)
    assert out.content == "50000\t50000\n50001\t50001"
    assert out.summary == "2 lines (lines 50000-50001 of 100001)"


async def test_invalid_utf8_is_shown_with_replacement_characters(tmp_path: Path) -> None:
    (tmp_path / "l1.txt").write_bytes(b"caf\xe9\n")
    out = await run(tool_ctx(tmp_path), path="l1.txt")
    assert out.text().startswith("   1\tcaf\ufffd\n")
    assert "not valid UTF-8" in out.text()


async def test_a_bom_is_not_shown(tmp_path: Path) -> None:
    (tmp_path / "b.txt").write_bytes(b"\xef\xbb\xbfhi\n")
    assert (await run(tool_ctx(tmp_path), path="b.txt")).content == "   1\thi"


@pytest.mark.parametrize("limit", [0, 1, 7, 50, 333])
def test_head_tail_matches_truncate_middle(limit: int) -> None:
    rng = random.Random(limit)
    for _ in range(100):
        lines = ["x" * rng.randint(0, 40) + str(i) for i in range(rng.randint(0, 60))]
        clip = read_file.HeadTail(limit)
        for line in lines:
            clip.add(line)
        assert clip.text() == truncate_middle("\n".join(lines), limit)
        assert clip.count == len(lines)
