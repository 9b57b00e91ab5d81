"""edit_file against real files: the reference matrix plus guard, endings, overlap and TOCTOU."""

from __future__ import annotations

import codecs
import os
from pathlib import Path
from typing import Any

import msgspec

from tests.tooling import prepare, tool_ctx
from turnstoned.tools import edit_file, read_file
from turnstoned.tools.base import PreparedCall, ToolContext, ToolOutput


def prep(ctx: ToolContext, **args: Any) -> PreparedCall:
    return prepare(edit_file, ctx, **args)


async def run(ctx: ToolContext, **args: Any) -> tuple[PreparedCall, ToolOutput | None]:
    call = prep(ctx, **args)
    if call.error:
        return call, None
    return call, await edit_file.execute(call, ctx)


async def read(ctx: ToolContext, path: str) -> None:
    args = msgspec.convert({"path": path}, read_file.Args, strict=False)
    out = await read_file.execute(read_file.prepare(args, ctx), ctx)
    assert not out.is_error, out.content


async def made(tmp_path: Path, content: str | bytes, name: str = "f.txt") -> ToolContext:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    ctx = tool_ctx(tmp_path)
    await read(ctx, name)
    return ctx


# -- the reference matrix -------------------------------------------------------------------------


async def test_single_replace(tmp_path: Path) -> None:
    ctx = await made(tmp_path, "hello world\n")
    call, out = await run(ctx, path="f.txt", old_string="world", new_string="there")
    assert call.needs_approval and call.label == "edit_file"
    assert out is not None and not out.is_error
    assert out.content == "Edited f.txt: applied 1 edit"
    assert (tmp_path / "f.txt").read_text() == "hello there\n"


async def test_missing_path(tmp_path: Path) -> None:
    assert prep(tool_ctx(tmp_path), old_string="a", new_string="b").error == "Error: missing path"


async def test_missing_old_string(tmp_path: Path) -> None:
    ctx = await made(tmp_path, "x\n")
    assert prep(ctx, path="f.txt", new_string="b").error == "Error: missing old_string"


async def test_identical_strings(tmp_path: Path) -> None:
    ctx = await made(tmp_path, "x\n")
    call = prep(ctx, path="f.txt", old_string="x", new_string="x")
    assert call.error == "Error: old_string and new_string are identical"


async def test_not_found(tmp_path: Path) -> None:
    ctx = await made(tmp_path, "abc\n")
    call = prep(ctx, path="f.txt", old_string="zzz", new_string="y")
    assert call.error == (
        "Error: old_string not found in f.txt. The file may have changed — re-read it before "
        "retrying."
    )
    assert not call.needs_approval


async def test_must_read_first(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("abc\n")
    call = prep(tool_ctx(tmp_path), path="f.txt", old_string="abc", new_string="x")
    assert call.error == "Error: must read_file f.txt before editing it"


async def test_found_twice(tmp_path: Path) -> None:
    ctx = await made(tmp_path, "foo\nbar\nfoo\n")
    call = prep(ctx, path="f.txt", old_string="foo", new_string="baz")
    assert (
        call.error == "Error: old_string found 2 times at lines 1, 3 — use near_line or replace_all"
    )


async def test_near_line_picks_the_nearest_occurrence(tmp_path: Path) -> None:
    ctx = await made(tmp_path, "foo\nbar\nfoo\n")
    _, out = await run(ctx, path="f.txt", old_string="foo", new_string="baz", near_line=3)
    assert out is not None and not out.is_error
    assert (tmp_path / "f.txt").read_text() == "foo\nbar\nbaz\n"


async def test_near_line_as_a_string(tmp_path: Path) -> None:
    ctx = await made(tmp_path, "foo\nbar\nfoo\n")
    await run(ctx, path="f.txt", old_string="foo", new_string="baz", near_line="1")
    assert (tmp_path / "f.txt").read_text() == "baz\nbar\nfoo\n"


async def test_deletion(tmp_path: Path) -> None:
    ctx = await made(tmp_path, "keep\ndrop me\nkeep\n")
    call, out = await run(ctx, path="f.txt", old_string="drop me\n", new_string="")
    assert "deletion" in call.preview and "8 chars removed" in call.preview
    assert out is not None and not out.is_error
    assert (tmp_path / "f.txt").read_text() == "keep\nkeep\n"


async def test_batch_of_two_and_three(tmp_path: Path) -> None:
    ctx = await made(tmp_path, "a\nb\nc\n")
    edits = [{"old_string": "a", "new_string": "A"}, {"old_string": "c", "new_string": "C"}]
    call, out = await run(ctx, path="f.txt", edits=edits)
    assert "(2 edits)" in call.header
    assert out is not None and out.content == "Edited f.txt: applied 2 edits"
    edits = [{"old_string": x, "new_string": x + x} for x in ("A", "b", "C")]
    call, out = await run(ctx, path="f.txt", edits=edits)
    assert "(3 edits)" in call.header and out is not None
    assert out.content == "Edited f.txt: applied 3 edits"
    assert (tmp_path / "f.txt").read_text() == "AA\nbb\nCC\n"


async def test_batch_edits_see_the_original_not_each_other(tmp_path: Path) -> None:
    ctx = await made(tmp_path, "x y\n")
    edits = [{"old_string": "x", "new_string": "y"}, {"old_string": "y", "new_string": "z"}]
    await run(ctx, path="f.txt", edits=edits)
    assert (tmp_path / "f.txt").read_text() == "y z\n"


async def test_overlap_is_refused_at_prepare_and_nothing_is_written(tmp_path: Path) -> None:
    ctx = await made(tmp_path, "abcdef\n")
    edits = [{"old_string": "abcd", "new_string": "X"}, {"old_string": "cdef", "new_string": "Y"}]
    call = prep(ctx, path="f.txt", edits=edits)
    assert call.error is not None and call.error.startswith("Error: edits overlap")
    assert not call.needs_approval  # nobody is asked to approve a doomed batch
    assert (tmp_path / "f.txt").read_text() == "abcdef\n"


async def test_two_identical_old_strings_overlap(tmp_path: Path) -> None:
    ctx = await made(tmp_path, "one two\n")
    edits = [{"old_string": "one", "new_string": "1"}, {"old_string": "one", "new_string": "I"}]
    call = prep(ctx, path="f.txt", edits=edits)
    assert call.error is not None and "edits overlap" in call.error
    assert "edits[0] and edits[1]" in call.error


async def test_batch_errors_carry_the_edit_label(tmp_path: Path) -> None:
    ctx = await made(tmp_path, "a\nb\n")
    edits = [{"old_string": "a", "new_string": "A"}, {"old_string": "zz", "new_string": "Z"}]
    call = prep(ctx, path="f.txt", edits=edits)
    assert call.error is not None and call.error.startswith("Error: edits[1]: old_string not found")
    bad = [{"old_string": "a", "new_string": "A"}, {"old_string": "", "new_string": "Z"}]
    assert prep(ctx, path="f.txt", edits=bad).error == "Error: edits[1]: missing old_string"
    same = [{"old_string": "a", "new_string": "a"}]
    assert prep(ctx, path="f.txt", edits=same).error == (
        "Error: edits[0]: old_string and new_string are identical"
    )
    assert prep(ctx, path="f.txt", edits=["a"]).error == (
        "Error: edits[0] must be an object with old_string and new_string"
    )


async def test_single_item_edits_array_has_no_label(tmp_path: Path) -> None:
    ctx = await made(tmp_path, "a\n")
    call, out = await run(ctx, path="f.txt", edits=[{"old_string": "a", "new_string": "b"}])
    assert "edits" not in call.header
    assert out is not None and out.content == "Edited f.txt: applied 1 edit"
    call = prep(ctx, path="f.txt", edits=[{"old_string": "zz", "new_string": "b"}])
    assert call.error is not None and call.error.startswith("Error: old_string not found")


async def test_both_modes_is_an_error(tmp_path: Path) -> None:
    ctx = await made(tmp_path, "a\n")
    call = prep(
        ctx, path="f.txt", old_string="a", new_string="b",
        edits=[{"old_string": "a", "new_string": "c"}],
    )  # fmt: skip
    assert call.error == "Error: provide old_string/new_string or edits array, not both"


async def test_neither_mode_mentions_old_string(tmp_path: Path) -> None:
    ctx = await made(tmp_path, "a\n")
    call = prep(ctx, path="f.txt")
    assert call.error is not None and "old_string" in call.error


async def test_empty_edits_falls_through_to_single_mode(tmp_path: Path) -> None:
    ctx = await made(tmp_path, "a\n")
    _, out = await run(ctx, path="f.txt", old_string="a", new_string="b", edits=[])
    assert out is not None and not out.is_error
    assert (tmp_path / "f.txt").read_text() == "b\n"


async def test_edits_sent_as_a_json_string_are_accepted(tmp_path: Path) -> None:
    ctx = await made(tmp_path, "a\n")
    _, out = await run(ctx, path="f.txt", edits='[{"old_string": "a", "new_string": "b"}]')
    assert out is not None and not out.is_error


async def test_file_changed_between_prepare_and_execute(tmp_path: Path) -> None:
    ctx = await made(tmp_path, "alpha\nbeta\n")
    call = prep(ctx, path="f.txt", old_string="alpha", new_string="ALPHA")
    (tmp_path / "f.txt").write_text("gamma\nbeta\n")
    out = await edit_file.execute(call, ctx)
    assert out.is_error and "no longer found" in out.content and "file changed" in out.content
    assert out.effect_status == "none"
    assert (tmp_path / "f.txt").read_text() == "gamma\nbeta\n"


async def test_file_changed_elsewhere_is_still_refused(tmp_path: Path) -> None:
    ctx = await made(tmp_path, "alpha\nbeta\n")
    call = prep(ctx, path="f.txt", old_string="alpha", new_string="ALPHA")
    (tmp_path / "f.txt").write_text("alpha\nbeta\ngamma\n")
    out = await edit_file.execute(call, ctx)
    assert out.is_error and out.text().startswith("Error: f.txt changed since the edit was")
    assert (tmp_path / "f.txt").read_text() == "alpha\nbeta\ngamma\n"


async def test_file_deleted_between_prepare_and_execute(tmp_path: Path) -> None:
    ctx = await made(tmp_path, "alpha\n")
    call = prep(ctx, path="f.txt", old_string="alpha", new_string="b")
    (tmp_path / "f.txt").unlink()
    out = await edit_file.execute(call, ctx)
    assert out.is_error and out.text().startswith("Error")
    assert not (tmp_path / "f.txt").exists()


async def test_partial_batch_failure_writes_nothing(tmp_path: Path) -> None:
    ctx = await made(tmp_path, "a\nb\n")
    edits = [{"old_string": "a", "new_string": "A"}, {"old_string": "nope", "new_string": "N"}]
    call = prep(ctx, path="f.txt", edits=edits)
    assert call.error is not None
    assert (tmp_path / "f.txt").read_text() == "a\nb\n"


async def test_missing_file(tmp_path: Path) -> None:
    ctx = await made(tmp_path, "a\n")
    (tmp_path / "f.txt").unlink()
    assert prep(ctx, path="f.txt", old_string="a", new_string="b").error == "Error: f.txt not found"


# -- replace_all ----------------------------------------------------------------------------------


async def test_replace_all(tmp_path: Path) -> None:
    ctx = await made(tmp_path, "x = 1\nx = 2\ny = x\n")
    call, out = await run(ctx, path="f.txt", old_string="x", new_string="z", replace_all=True)
    assert "(replace_all: 3 occurrences)" in call.preview
    assert out is not None and out.content == "Edited f.txt: replaced 3 occurrences"
    assert (tmp_path / "f.txt").read_text() == "z = 1\nz = 2\ny = z\n"


async def test_replace_all_conflicts(tmp_path: Path) -> None:
    ctx = await made(tmp_path, "x\n")
    with_line = prep(ctx, path="f.txt", old_string="x", new_string="y", replace_all=True,
                     near_line=1)  # fmt: skip
    assert with_line.error == "Error: replace_all cannot be used with near_line"
    batch = prep(ctx, path="f.txt", replace_all="true",
                 edits=[{"old_string": "x", "new_string": "y"}])  # fmt: skip
    assert batch.error == "Error: replace_all cannot be used with edits array"


async def test_replace_all_false_as_a_string_is_false(tmp_path: Path) -> None:
    ctx = await made(tmp_path, "x x\n")
    call = prep(ctx, path="f.txt", old_string="x", new_string="y", replace_all="false")
    assert call.error is not None and "found 2 times" in call.error


# -- guard, endings, encoding, atomicity, preview -------------------------------------------------


async def test_read_through_a_symlink_authorises_the_target(tmp_path: Path) -> None:
    (tmp_path / "real.txt").write_text("v1\n")
    (tmp_path / "link.txt").symlink_to(tmp_path / "real.txt")
    ctx = tool_ctx(tmp_path)
    await read(ctx, "link.txt")
    _, out = await run(ctx, path="real.txt", old_string="v1", new_string="v2")
    assert out is not None and not out.is_error
    assert (tmp_path / "real.txt").read_text() == "v2\n"


async def test_reading_the_target_authorises_editing_via_the_link(tmp_path: Path) -> None:
    (tmp_path / "real.txt").write_text("v1\n")
    (tmp_path / "link.txt").symlink_to(tmp_path / "real.txt")
    ctx = tool_ctx(tmp_path)
    await read(ctx, "real.txt")
    call, out = await run(ctx, path="link.txt", old_string="v1", new_string="v2")
    assert "→" in call.header and out is not None and not out.is_error
    assert (tmp_path / "link.txt").is_symlink()
    assert (tmp_path / "real.txt").read_text() == "v2\n"


async def test_crlf_line_endings_are_preserved(tmp_path: Path) -> None:
    ctx = await made(tmp_path, b"def f():\r\n    return 1\r\n\r\nx = 2\r\n")
    _, out = await run(
        ctx, path="f.txt", old_string="def f():\n    return 1\n",
        new_string="def f():\n    # one\n    return 1\n",
    )  # fmt: skip
    assert out is not None and not out.is_error, out
    assert (tmp_path / "f.txt").read_bytes() == (
        b"def f():\r\n    # one\r\n    return 1\r\n\r\nx = 2\r\n"
    )


async def test_utf8_bom_is_preserved(tmp_path: Path) -> None:
    ctx = await made(tmp_path, codecs.BOM_UTF8 + "naïve = 1\n".encode())
    await run(ctx, path="f.txt", old_string="1", new_string="2")
    assert (tmp_path / "f.txt").read_bytes() == codecs.BOM_UTF8 + "naïve = 2\n".encode()


async def test_non_utf8_file_is_refused_not_mangled(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_bytes(b"caf\xe9 = 1\n")
    ctx = tool_ctx(tmp_path)
    await read(ctx, "f.txt")
    call = prep(ctx, path="f.txt", old_string="1", new_string="2")
    assert call.error is not None and "is not UTF-8 text" in call.error
    assert (tmp_path / "f.txt").read_bytes() == b"caf\xe9 = 1\n"


async def test_atomic_write_leaves_no_temp_files_and_keeps_the_mode(tmp_path: Path) -> None:
    ctx = await made(tmp_path, "a\n")
    os.chmod(tmp_path / "f.txt", 0o640)
    await run(ctx, path="f.txt", old_string="a", new_string="b")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.txt"]
    assert (tmp_path / "f.txt").stat().st_mode & 0o777 == 0o640


async def test_preview_is_a_unified_diff_of_the_whole_change(tmp_path: Path) -> None:
    body = "".join(f"line {i}\n" for i in range(1, 41))
    ctx = await made(tmp_path, body)
    edits = [
        {"old_string": "line 5\n", "new_string": "line five\n"},
        {"old_string": "line 30\n", "new_string": "line thirty\nextra\n"},
    ]
    call = prep(ctx, path="f.txt", edits=edits)
    assert call.preview.splitlines()[:2] == ["--- f.txt", "+++ f.txt"]
    assert "@@ -2,7 +2,7 @@" in call.preview
    assert "@@ -27,7 +27,8 @@" in call.preview
    assert "-line 5\n+line five\n" in call.preview
    assert "-line 30\n+line thirty\n+extra\n" in call.preview
