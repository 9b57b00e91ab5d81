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
    """Where an edit lands: ``text[start:end]`` becomes ``new``; ``line`` is where it starts."""

    start: int
    end: int
    new: str
    line: int
    label: str = ""


def find_occurrences(content: str, old: str, *, overlapping: bool = True) -> list[tuple[int, int]]:
    """Every start of ``old`` in ``content`` as (offset, line).

    Overlapping starts count by default (the reference's match counting); with
    ``overlapping=False`` the scan skips past each match, as replace-all does.
    """
    if not old:
        return []
    step = 1 if overlapping else len(old)
    found: list[tuple[int, int]] = []
    line, counted = 1, 0
    pos = content.find(old)
    while pos != -1:
        line += content.count("\n", counted, pos)
        counted = pos
        found.append((pos, line))
        pos = content.find(old, pos + step)
    return found


def find_disjoint(content: str, old: str) -> list[tuple[int, int]]:
    """Starts of ``old`` scanning left to right without overlap (what replace-all replaces)."""
    return find_occurrences(content, old, overlapping=False)


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
    """A unified diff of the change, computed only around the edited lines (lazily).

    ``spans`` are sorted and disjoint; ``new_text`` is ``old_text`` with them applied.
    """
    yield f"--- {name}\n"
    yield f"+++ {name}\n"
    for (a_lo, a_hi, a_line), (b_lo, b_hi, b_line) in _windows(old_text, spans, context):
        old = split_keepends(old_text[a_lo:a_hi])
        new = split_keepends(new_text[b_lo:b_hi])
        yield from hunks(old, new, (a_line, b_line), context)


Window = tuple[int, int, int]  # start offset, end offset, 0-based number of the first line


def _windows(text: str, spans: Sequence[Span], context: int) -> Iterator[tuple[Window, Window]]:
    """Matching old/new windows that together hold every change, each with context lines.

    Text between windows is unchanged, so a new-side window is the old one
    shifted by what the earlier spans added or removed (in chars and in lines).
    """
    current: list[int] | None = None  # [lo, hi, first line, char shift, line shift]
    chars = lines = 0
    for span in spans:
        line = span.line - 1
        lo, back = _lines_back(text, span.start, context)
        hi = _lines_forward(text, span.end, context)
        if current is not None and lo <= current[1]:
            current[1] = hi
        else:
            if current is not None:
                yield _pair(current, chars, lines)
            current = [lo, hi, line - back, chars, lines]
        removed = text.count("\n", span.start, span.end)
        chars += len(span.new) - (span.end - span.start)
        lines += span.new.count("\n") - removed
    if current is not None:
        yield _pair(current, chars, lines)


def _pair(window: list[int], chars_after: int, lines_after: int) -> tuple[Window, Window]:
    lo, hi, first, chars_before, lines_before = window
    return (lo, hi, first), (lo + chars_before, hi + chars_after, first + lines_before)


def _lines_back(text: str, pos: int, count: int) -> tuple[int, int]:
    """Offset of the line ``count`` lines above the one holding ``pos``, and how many it went."""
    start = text.rfind("\n", 0, pos) + 1
    went = 0
    while went < count and start > 0:
        start = text.rfind("\n", 0, start - 1) + 1
        went += 1
    return start, went


def _lines_forward(text: str, pos: int, count: int) -> int:
    """Offset just past the line holding ``pos`` and ``count`` more lines."""
    end = pos
    for _ in range(count + 1):
        if end >= len(text):
            return len(text)
        newline = text.find("\n", end)
        end = len(text) if newline < 0 else newline + 1
    return end
