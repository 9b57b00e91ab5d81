"""write_file against real files: modes, labels, diff previews, atomicity, symlinks."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import msgspec

from tests.tooling import prepare, tool_ctx
from turnstoned.tools import edit_file, read_file, write_file
from turnstoned.tools.base import PreparedCall, ToolContext, ToolOutput


def prep(ctx: ToolContext, **args: Any) -> PreparedCall:
    return prepare(write_file, ctx, **args)


async def run(ctx: ToolContext, **args: Any) -> tuple[PreparedCall, ToolOutput]:
    call = prep(ctx, **args)
    assert call.error is None, call.error
    return call, await write_file.execute(call, ctx)


async def test_new_file_with_parent_directories(tmp_path: Path) -> None:
    ctx = tool_ctx(tmp_path)
    call, out = await run(ctx, path="a/b/new.txt", content="one\ntwo\n")
    assert call.needs_approval and call.label == "write_file"
    assert call.header == "⚙ write_file (write): a/b/new.txt (8 chars)"
    assert call.preview == "--- /dev/null\n+++ a/b/new.txt\n@@ -0,0 +1,2 @@\n+one\n+two"
    assert out.content == "Wrote 8 chars to a/b/new.txt" and not out.is_error
    assert (tmp_path / "a/b/new.txt").read_text() == "one\ntwo\n"


async def test_overwriting_an_unread_file_is_labelled_and_warned(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("keep\nold\n")
    ctx = tool_ctx(tmp_path)
    call, out = await run(ctx, path="f.txt", content="keep\nnew\n")
    assert call.label == "overwrite_file"
    assert "⚠ overwriting existing file not previously read" in call.preview
    assert "--- f.txt\n+++ f.txt\n@@ -1,2 +1,2 @@\n keep\n-old\n+new" in call.preview
    assert not out.is_error and (tmp_path / "f.txt").read_text() == "keep\nnew\n"


async def test_overwriting_a_read_file_is_a_plain_write(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("old\n")
    ctx = tool_ctx(tmp_path)
    args = msgspec.convert({"path": "f.txt"}, read_file.Args)
    await read_file.execute(read_file.prepare(args, ctx), ctx)
    call = prep(ctx, path="f.txt", content="new\n")
    assert call.label == "write_file" and "⚠" not in call.preview


async def test_append_mode(tmp_path: Path) -> None:
    (tmp_path / "log.txt").write_text("first\n")
    ctx = tool_ctx(tmp_path)
    call, out = await run(ctx, path="log.txt", content="second\n", mode=" APPEND ")
    assert call.label == "append_file"
    assert call.header == "⚙ write_file (append): log.txt (7 chars)"
    assert " first\n+second" in call.preview
    assert out.content == "Appended 7 chars to log.txt"
    assert (tmp_path / "log.txt").read_text() == "first\nsecond\n"


async def test_unknown_mode_means_overwrite(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("old\n")
    _, out = await run(tool_ctx(tmp_path), path="f.txt", content="new\n", mode="bogus")
    assert out.text().startswith("Wrote") and (tmp_path / "f.txt").read_text() == "new\n"


async def test_missing_path_and_directory_targets(tmp_path: Path) -> None:
    ctx = tool_ctx(tmp_path)
    assert prep(ctx, content="x").error == "Error: missing path"
    (tmp_path / "d").mkdir()
    assert prep(ctx, path="d", content="x").error == "Error: d is a directory, not a file"


async def test_unchanged_content_says_so(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("same\n")
    call = prep(tool_ctx(tmp_path), path="f.txt", content="same\n")
    assert "(no changes" in call.preview


async def test_write_counts_as_read_for_edit_file(tmp_path: Path) -> None:
    ctx = tool_ctx(tmp_path)
    await run(ctx, path="f.txt", content="alpha\n")
    args = {"path": "f.txt", "old_string": "alpha", "new_string": "beta"}
    call = edit_file.prepare(msgspec.convert(args, edit_file.Args), ctx)
    assert call.error is None


async def test_overwrite_is_atomic_keeps_mode_and_leaves_no_temp_files(tmp_path: Path) -> None:
    (tmp_path / "run.sh").write_text("echo old\n")
    os.chmod(tmp_path / "run.sh", 0o751)
    await run(tool_ctx(tmp_path), path="run.sh", content="echo new\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.sh"]
    assert (tmp_path / "run.sh").stat().st_mode & 0o777 == 0o751


async def test_writing_through_a_symlink_replaces_the_target(tmp_path: Path) -> None:
    (tmp_path / "real.txt").write_text("old\n")
    (tmp_path / "link.txt").symlink_to("real.txt")
    call, _ = await run(tool_ctx(tmp_path), path="link.txt", content="new\n")
    assert f"link.txt → {tmp_path / 'real.txt'}" in call.header
    assert (tmp_path / "link.txt").is_symlink()
    assert (tmp_path / "real.txt").read_text() == "new\n"


async def test_big_new_file_preview_is_capped(tmp_path: Path) -> None:
    content = "".join(f"line {i}\n" for i in range(50_000))
    call = prep(tool_ctx(tmp_path), path="big.txt", content=content)
    assert len(call.preview) < 20_000
    assert call.preview.endswith("... (preview truncated; the change goes on)")


_WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from turnstoned.tools._files import atomic_write
    target = Path(sys.argv[1])
    blobs = [b"A" * (4 << 20), b"B" * (4 << 20)]
    n = 0
    while True:
        atomic_write(target, blobs[n % 2])
        n += 1
        if n == 3:
            print("writing", flush=True)
    """
)


def test_a_crash_mid_write_leaves_the_old_or_the_new_file(tmp_path: Path) -> None:
    target = tmp_path / "data.bin"
    target.write_bytes(b"A" * (4 << 20))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    child = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(target)], stdout=subprocess.PIPE, env=env
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == b"writing\n"  # mid-loop: writes are in flight
        child.send_signal(signal.SIGKILL)
    finally:
        child.kill()
        child.wait(timeout=10)
    data = target.read_bytes()
    assert data in (b"A" * (4 << 20), b"B" * (4 << 20))
