"""A file change the user edited before it was written, told to the model hunk by hunk.

When an approval carries the file's final text (the user reverted or rewrote hunks of the
proposal in the editor's review diff), the daemon writes exactly that text. The model then
reads which of its hunks were written as proposed, which were dropped (the file keeps its
old text there) and which the user changed, and the exact difference between what it
proposed and what was written, so it neither redoes a dropped hunk nor fights the user's
wording.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Literal

DIFF_CAP = 6_000  # characters of the proposed-to-written diff the model reads
NAMED = 12  # hunks named per fate; the rest are counted

Fate = Literal["kept", "dropped", "changed"]


def _lines(text: str) -> list[str]:
    """Lines split on ``\n`` only, each keeping it (as the proposal's diff splits them)."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


@dataclass(frozen=True, slots=True)
class Hunk:
    """One hunk of the model's proposal: old lines ``first``..``last`` (1-based, inclusive;
    ``last < first`` for a pure insertion before ``first``) and what became of it."""

    first: int
    last: int
    fate: Fate

    def where(self) -> str:
        if self.last < self.first:
            return f"an insertion before line {self.first}"
        if self.last == self.first:
            return f"line {self.first}"
        return f"lines {self.first}-{self.last}"


def fates(old: str, proposed: str, final: str) -> list[Hunk]:
    """What became of each hunk of ``old`` → ``proposed`` in ``final``.

    A hunk's region in ``final`` lies between the nearest old lines around it that
    ``final`` still has unchanged; it was kept if that region is the proposed text,
    dropped if it is the old text, changed otherwise.
    """
    a, b, c = _lines(old), _lines(proposed), _lines(final)
    kept_lines: dict[int, int] = {}
    for block in difflib.SequenceMatcher(None, a, c, autojunk=False).get_matching_blocks():
        for k in range(block.size):
            kept_lines[block.a + k] = block.b + k
    anchors = sorted(kept_lines)
    hunks: list[Hunk] = []
    proposal = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in proposal.get_opcodes():
        if tag == "equal":
            continue
        before = [i for i in anchors if i < i1]
        after = [i for i in anchors if i >= i2]
        start = kept_lines[before[-1]] + 1 if before else 0
        end = kept_lines[after[0]] if after else len(c)
        region = c[start:max(start, end)]
        fate: Fate = ("kept" if region == b[j1:j2] else
                      "dropped" if region == a[i1:i2] else "changed")
        hunks.append(Hunk(i1 + 1, i2, fate))
    return hunks


def note(path: str, old: str, proposed: str, final: str) -> str:
    """What the model reads before the result of a file change the user edited."""
    hunks = fates(old, proposed, final)
    lines = [(f"[The user edited your change to {path} in the review before it was written; "
             "the file now holds exactly the user's version.")]
    for fate, words in (("kept", "written as you proposed"),
                        ("dropped", ("dropped by the user (the file keeps its old text there; "
                                    "do not redo them unless asked)")),
                        ("changed", "changed by the user (keep the user's wording)")):
        mine = [h.where() for h in hunks if h.fate == fate]
        if mine:
            named = ", ".join(mine[:NAMED]) + (f" and {len(mine) - NAMED} more"
                                               if len(mine) > NAMED else "")
            lines.append(f"Of your {len(hunks)} hunk(s), {len(mine)} {words}: {named}.")
    diff = "".join(difflib.unified_diff(_lines(proposed), _lines(final),
                                        "what you proposed", "what was written", n=1))
    if diff:
        if len(diff) > DIFF_CAP:
            diff = diff[:DIFF_CAP] + f"\n… ({len(diff) - DIFF_CAP:,} more characters of the diff)\n"
        lines.append("The difference, from your proposal to what was written:\n" + diff.rstrip("\n"))
    return "\n".join(lines) + "]\n"
