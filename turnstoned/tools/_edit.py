"""String-edit mechanics for edit_file: finding occurrences, picking one, checking overlap.

Everything here works on LF-normalised text (see ``_files.TextDoc``) and is pure.
Positions are character offsets; line numbers are 1-based.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from turnstoned.tools._files import hunks, split_keepends

MAX_LISTED_LINES = 20


class EditProblem(Exception):
    """An edit cannot be applied; ``str(exc)`` is the model-facing error text."""


@dataclass(frozen=True, slots=True)
class Edit:
    """One requested replacement. ``label`` is ``"edits[i]: "`` in batches of two or more."""

    old: str
    new: str
    near_line: int | None = None
    label: str = ""


@dataclass(frozen=True, slots=True)
class Span:
    """Where an edit lands: ``text[start:end]`` becomes ``new``."""

    start: int
    end: int
    new: str
    line: int
    label: str = ""


def find_occurrences(content: str, old: str) -> list[tuple[int, int]]:
    """Every start of ``old`` in ``content`` as (offset, line), overlapping ones included."""
    if not old:
        return []
    found: list[tuple[int, int]] = []
    line, counted = 1, 0
    pos = content.find(old)
    while pos != -1:
        line += content.count("\n", counted, pos)
        counted = pos
        found.append((pos, line))
        pos = content.find(old, pos + 1)
    return found


def find_disjoint(content: str, old: str) -> list[tuple[int, int]]:
    """Starts of ``old`` scanning left to right without overlap (what replace-all replaces)."""
    if not old:
        return []
    found: list[tuple[int, int]] = []
    line, counted = 1, 0
    pos = content.find(old)
    while pos != -1:
        line += content.count("\n", counted, pos)
        counted = pos
        found.append((pos, line))
        pos = content.find(old, pos + len(old))
    return found


def pick_nearest(lines: Sequence[int], near_line: int) -> int:
    """Index of the line closest to ``near_line`` (the first on a tie); -1 when empty."""
    best, best_distance = -1, 0
    for index, line in enumerate(lines):
        distance = abs(line - near_line)
        if best < 0 or distance < best_distance:
            best, best_distance = index, distance
    return best


def first_overlap(spans: Sequence[Span]) -> tuple[Span, Span] | None:
    """Two spans that share characters (two edits of the same text included), if any."""
    ordered = sorted(spans, key=lambda s: (s.start, s.end))
    for left, right in itertools.pairwise(ordered):
        if left.end > right.start:
            return left, right
    return None


def _line_list(lines: Sequence[int]) -> str:
    shown = ", ".join(str(n) for n in lines[:MAX_LISTED_LINES])
    return shown + (", …" if len(lines) > MAX_LISTED_LINES else "")


def not_found_message(content: str, edit: Edit, display: str) -> str:
    """The "not found" error, with a hint when only trailing whitespace is in the way."""
    message = (
        f"Error: {edit.label}old_string not found in {display}. "
        "The file may have changed — re-read it before retrying."
    )
    line = _match_ignoring_trailing_space(content, edit.old)
    if line:
        message += (
            f" (It would match at line {line} if trailing whitespace were ignored: "
            "read_file does not show spaces or tabs at line ends, so include them exactly "
            "or choose an old_string that avoids those line ends.)"
        )
    return message


def _match_ignoring_trailing_space(content: str, old: str) -> int:
    def strip(s: str) -> str:
        return "\n".join(part.rstrip(" \t") for part in s.split("\n"))

    needle = strip(old)
    if not needle.strip():
        return 0
    stripped = strip(content)
    pos = stripped.find(needle)
    return stripped.count("\n", 0, pos) + 1 if pos >= 0 else 0


def locate(content: str, edit: Edit, display: str) -> Span:
    """The one place ``edit`` applies: unique, or the nearest to ``near_line``."""
    found = find_occurrences(content, edit.old)
    if not found:
        raise EditProblem(not_found_message(content, edit, display))
    index = 0
    if len(found) > 1:
        if edit.near_line is None:
            raise EditProblem(
                f"Error: {edit.label}old_string found {len(found)} times at lines "
                f"{_line_list([line for _, line in found])} — use near_line or replace_all"
            )
        index = pick_nearest([line for _, line in found], edit.near_line)
    pos, line = found[index]
    return Span(pos, pos + len(edit.old), edit.new, line, edit.label)


def locate_all(content: str, edit: Edit, display: str) -> list[Span]:
    """Every disjoint occurrence of ``edit.old`` (replace_all)."""
    found = find_disjoint(content, edit.old)
    if not found:
        raise EditProblem(not_found_message(content, edit, display))
    return [Span(pos, pos + len(edit.old), edit.new, line, edit.label) for pos, line in found]


def check_overlap(spans: Sequence[Span]) -> None:
    """Refuse a batch whose edits touch the same text."""
    pair = first_overlap(spans)
    if pair is None:
        return
    left, right = pair
    names = " and ".join(s.label.rstrip(": ") or "an edit" for s in (left, right))
    raise EditProblem(
        f"Error: edits overlap — two edits modify the same region ({names}, at line "
        f"{right.line}). Merge them into one edit, or make each old_string cover a "
        "separate part of the file."
    )


def edit_diff(
    old_text: str, new_text: str, spans: Sequence[Span], *, name: str, context: int = 3
) -> Iterator[str]:
    """A unified diff of the change, computed only around the edited lines.

    ``spans`` are sorted and disjoint; ``new_text`` is ``old_text`` with them applied.
    """
    a, b = split_keepends(old_text), split_keepends(new_text)
    yield f"--- {name}\n"
    yield f"+++ {name}\n"
    for window in _windows(old_text, spans, (len(a), len(b)), context):
        yield from hunks(a, b, window, context)


def _windows(
    text: str, spans: Sequence[Span], sizes: tuple[int, int], context: int
) -> list[tuple[int, int, int, int]]:
    """Line windows (old lo/hi, new lo/hi) that together hold every change.

    Lines between windows are unchanged, so the new side is the old side
    shifted by the newlines the earlier spans added or removed.
    """
    len_a, len_b = sizes
    merged: list[list[int]] = []  # [a_lo, a_hi, shift_before, shift_after]
    line = pos = shift = 0
    for span in spans:
        line += text.count("\n", pos, span.start)
        removed = text.count("\n", span.start, span.end)
        lo, hi = max(0, line - context), min(len_a, line + removed + context + 1)
        after = shift + span.new.count("\n") - removed
        if merged and lo <= merged[-1][1]:
            merged[-1][1], merged[-1][3] = hi, after
        else:
            merged.append([lo, hi, shift, after])
        line, pos, shift = line + removed, span.end, after
    windows = []
    for a_lo, a_hi, before, after in merged:
        b_hi = len_b if a_hi >= len_a else min(len_b, a_hi + after)
        windows.append((a_lo, a_hi, min(len_b, a_lo + before), b_hi))
    return windows
