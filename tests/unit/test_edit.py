"""Pure helpers behind edit_file: occurrences, nearest pick, overlap, line endings, diffs."""

from __future__ import annotations

import codecs
import random
import re

import pytest

from turnstoned.tools._edit import (
    Edit,
    EditProblem,
    Span,
    check_overlap,
    edit_diff,
    find_disjoint,
    find_occurrences,
    first_overlap,
    locate,
    pick_nearest,
)
from turnstoned.tools._files import (
    FileProblem,
    TextDoc,
    split_keepends,
    unified_diff,
)

# -- occurrences and picking -------------------------------------------------------------


def test_occurrences_report_offsets_and_one_based_lines() -> None:
    assert find_occurrences("foo\nbar\nfoo\n", "foo") == [(0, 1), (8, 3)]


def test_occurrences_of_a_multi_line_string_start_at_its_first_line() -> None:
    text = "a\nb\nc\nb\nc\n"
    assert find_occurrences(text, "b\nc") == [(2, 2), (6, 4)]


def test_overlapping_occurrences_are_all_counted() -> None:
    assert find_occurrences("aaaa", "aa") == [(0, 1), (1, 1), (2, 1)]


def test_replace_all_occurrences_do_not_overlap() -> None:
    assert find_disjoint("aaaa", "aa") == [(0, 1), (2, 1)]


def test_empty_old_string_has_no_occurrences() -> None:
    assert find_occurrences("abc", "") == []
    assert find_disjoint("abc", "") == []


def test_missing_string_has_no_occurrences() -> None:
    assert find_occurrences("abc", "x") == []


def test_nearest_pick_takes_the_closest_line() -> None:
    assert pick_nearest([1, 10, 20], 12) == 1
    assert pick_nearest([1, 10, 20], 100) == 2


def test_nearest_pick_prefers_the_first_on_a_tie() -> None:
    assert pick_nearest([1, 5], 3) == 0


def test_nearest_pick_of_nothing_is_minus_one() -> None:
    assert pick_nearest([], 3) == -1


def test_locate_uses_near_line_only_to_break_ties() -> None:
    text = "foo\nbar\nfoo\n"
    assert locate(text, Edit("foo", "x", near_line=3), "f").line == 3
    assert locate(text, Edit("bar", "x", near_line=99), "f").line == 2


def test_locate_lists_every_line_of_an_ambiguous_match() -> None:
    with pytest.raises(EditProblem) as info:
        locate("x\ny\nx\ny\nx\n", Edit("x", "z", label="edits[1]: "), "f.py")
    assert str(info.value) == (
        "Error: edits[1]: old_string found 3 times at lines 1, 3, 5 — use near_line or replace_all"
    )


def test_not_found_points_at_trailing_whitespace_it_cannot_see() -> None:
    with pytest.raises(EditProblem) as info:
        locate("a = 1   \nb = 2\n", Edit("a = 1\nb = 2", "x"), "f.py")
    message = str(info.value)
    assert message.startswith("Error: old_string not found in f.py. The file may have changed")
    assert "line 1 if trailing whitespace were ignored" in message


def test_overlap_is_found_for_identical_and_intersecting_spans() -> None:
    assert first_overlap([Span(0, 3, "", 1), Span(0, 3, "", 1)]) is not None
    assert first_overlap([Span(5, 9, "", 1), Span(0, 6, "", 1)]) is not None


def test_adjacent_spans_do_not_overlap() -> None:
    assert first_overlap([Span(0, 3, "", 1), Span(3, 5, "", 1)]) is None
    check_overlap([Span(0, 3, "", 1), Span(3, 5, "", 1)])


def test_overlap_error_names_the_edits() -> None:
    spans = [Span(0, 3, "", 1, "edits[0]: "), Span(2, 4, "", 1, "edits[2]: ")]
    with pytest.raises(EditProblem, match=r"^Error: edits overlap — two edits modify the same"):
        check_overlap(spans)
    with pytest.raises(EditProblem, match=r"edits\[0\] and edits\[2\]"):
        check_overlap(spans)


# -- decoding and line endings ---------------------------------------------------------------


def test_crlf_file_is_matched_as_lf_and_written_back_as_crlf() -> None:
    doc = TextDoc.decode(b"one\r\ntwo\r\nthree\r\n", "f")
    assert doc.text == "one\ntwo\nthree\n"
    start = doc.text.index("two\nthree")
    text, raw = doc.apply([(start, start + len("two\nthree"), "2\n3\n3b")])
    assert text == "one\n2\n3\n3b\n"
    assert doc.encode(raw) == b"one\r\n2\r\n3\r\n3b\r\n"


def test_mixed_endings_keep_every_untouched_byte() -> None:
    doc = TextDoc.decode(b"a\r\nb\nc\r\nd\n", "f")
    start = doc.text.index("c")
    _, raw = doc.apply([(start, start + 1, "C")])
    assert raw == "a\r\nb\nC\r\nd\n"


def test_inserted_lines_take_the_ending_of_the_region_they_replace() -> None:
    doc = TextDoc.decode(b"a\nb\r\nc\r\nd\n", "f")
    start = doc.text.index("b\nc")
    _, raw = doc.apply([(start, start + 3, "x\ny\nz")])
    assert raw == "a\nx\r\ny\r\nz\r\nd\n"


def test_a_bom_is_kept() -> None:
    doc = TextDoc.decode(codecs.BOM_UTF8 + "héllo\n".encode(), "f")
    assert doc.text == "héllo\n"
    _, raw = doc.apply([(0, 1, "H")])
    assert doc.encode(raw) == codecs.BOM_UTF8 + "Héllo\n".encode()


def test_non_utf8_text_is_refused_with_the_reason() -> None:
    with pytest.raises(FileProblem, match=r"not UTF-8 text \(byte 0xe9 at offset 3"):
        TextDoc.decode(b"caf\xe9\n", "menu.txt")


def test_binary_content_is_refused_like_read_file_does() -> None:
    with pytest.raises(FileProblem, match="appears to be a binary file"):
        TextDoc.decode(b"ab\0cd", "blob")


def test_split_keepends_splits_on_newline_only() -> None:
    assert split_keepends("a\x0cb\nc") == ["a\x0cb\n", "c"]
    assert split_keepends("") == []
    assert split_keepends("x\n") == ["x\n"]


# -- diffs -------------------------------------------------------------------------------------

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@$")


def apply_patch(old: str, patch: str) -> str:
    """Apply a unified diff (as produced here) to ``old``; fails on any mismatch."""
    a = split_keepends(old)
    out: list[str] = []
    pos = 0
    lines = patch.splitlines(keepends=True)
    assert lines[0].startswith("--- ") and lines[1].startswith("+++ ")
    i = 2
    while i < len(lines):
        head = _HUNK.match(lines[i].rstrip("\n"))
        assert head, lines[i]
        start = int(head.group(1)) - (0 if head.group(2) == "0" else 1)
        out += a[pos:start]
        pos = start
        i += 1
        while i < len(lines) and not lines[i].startswith("@@"):
            tag, body = lines[i][0], lines[i][1:]
            if i + 1 < len(lines) and lines[i + 1].startswith("\\ No newline"):
                body = body[:-1]
                i += 1
            if tag in " -":
                assert a[pos] == body, (pos, a[pos], body)
                pos += 1
            if tag in " +":
                out.append(body)
            i += 1
    return "".join(out + a[pos:])


def _random_text(rng: random.Random, lines: int) -> str:
    words = ["alpha", "beta", "gamma", "", "    return x", "}", "delta"]
    text = "\n".join(rng.choice(words) for _ in range(lines))
    return text + ("\n" if rng.random() < 0.7 else "")


def test_whole_file_diff_applies_back_to_the_new_text() -> None:
    rng = random.Random(7)
    for _ in range(200):
        old = _random_text(rng, rng.randint(0, 40))
        new_lines = split_keepends(old)
        for _ in range(rng.randint(1, 4)):
            at = rng.randint(0, len(new_lines))
            new_lines[at : at + rng.randint(0, 2)] = [rng.choice(["new\n", "x\n", "last"])]
        new = "".join(new_lines)
        patch = "".join(
            unified_diff(split_keepends(old), split_keepends(new), fromfile="a", tofile="b",
                         context=rng.randint(0, 4))
        )  # fmt: skip
        assert (apply_patch(old, patch) if patch else old) == new


def test_edit_diff_covers_every_span_and_applies_back() -> None:
    rng = random.Random(11)
    for _ in range(200):
        old = _random_text(rng, rng.randint(1, 60))
        if not old:
            continue
        cuts = sorted(rng.sample(range(len(old) + 1), k=min(len(old) + 1, 2 * rng.randint(1, 3))))
        spans = [
            Span(s, e, rng.choice(["", "N", "n1\nn2\n", "\n"]), old.count("\n", 0, s) + 1)
            for s, e in zip(cuts[::2], cuts[1::2], strict=False)
            if e > s
        ]
        if not spans:
            continue
        doc = TextDoc.from_raw(old)
        new, _ = doc.apply([(s.start, s.end, s.new) for s in spans])
        patch = "".join(edit_diff(old, new, spans, name="f", context=rng.randint(0, 3)))
        assert apply_patch(old, patch) == new


def test_diff_marks_a_missing_final_newline() -> None:
    patch = "".join(unified_diff(["a\n", "b"], ["a\n", "c"], fromfile="x", tofile="x"))
    assert patch == (
        "--- x\n+++ x\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n"
        "+c\n\\ No newline at end of file\n"
    )


def test_new_file_diff_is_all_added_lines() -> None:
    patch = "".join(unified_diff([], ["a\n", "b\n"], fromfile="/dev/null", tofile="n"))
    assert patch == "--- /dev/null\n+++ n\n@@ -0,0 +1,2 @@\n+a\n+b\n"


def test_equal_inputs_give_no_diff() -> None:
    assert list(unified_diff(["a\n"], ["a\n"], fromfile="x", tofile="y")) == []
