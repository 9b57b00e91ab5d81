"""The output guard's machinery: rules (a pattern, its flag, when it runs, what it redacts),
the per-call scan that applies them within a time budget (see ``core.guard``), and the view
that lets them read a text with its wrappers (line tags, colour escapes) set aside."""

from __future__ import annotations

import re
import time
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import accumulate, chain, pairwise

RISK_ORDER: dict[str, int] = {"low": 0, "medium": 1, "high": 2}
CATEGORIES = ("prompt_injection", "credential_leak", "encoded_payload", "adversarial_url",
              "info_disclosure")
_CHUNK = 1 << 20
_OVERLAP = 8192


@dataclass(frozen=True)
class Finding:
    """One kind of problem seen in a text (repeats are counted in ``detail``)."""

    category: str
    flag: str
    risk: str
    detail: str


def _always(m: re.Match[str]) -> bool:
    return True


@dataclass(frozen=True)
class Rule:
    """A flag raised for each match of ``pattern`` that passes ``left`` and ``accept``.

    ``left`` is a one-character class that must not precede the match (a diff's
    sign at a line's start does not count). A rule with a ``tag`` redacts: its
    named group ``v`` is replaced by the tag (with ``unquote``, only what is inside
    the quotes around ``v``, if it has them). The rule runs only if one of its
    lower-case ``triggers`` occurs in the text.
    """

    category: str
    flag: str
    risk: str
    detail: str
    triggers: tuple[str, ...]
    pattern: re.Pattern[str]
    left: re.Pattern[str] | None = None
    accept: Callable[[re.Match[str]], bool] = _always
    tag: str | None = None
    unquote: bool = False

    def hit(self, m: re.Match[str]) -> bool:
        at, s = m.start(), m.string
        if (self.left is not None and at and self.left.match(s, at - 1)
                and not diff_sign(s, at - 1)):
            return False
        return self.accept(m)


def diff_sign(s: str, i: int) -> bool:
    """True when ``s[i]`` is a diff's +/- at the start of a line: no part of the line's text."""
    return s[i] in "+-" and (i == 0 or s[i - 1] == "\n")


class Scan:
    """Per-call state: the deadline and a tally of what was seen."""

    def __init__(self, budget_seconds: float) -> None:
        self.deadline = time.monotonic() + budget_seconds
        self.tally: dict[tuple[str, str, str, str], int] = {}
        self._lower = ""
        self._present: dict[str, bool] = {}

    def present(self, lower: str, trigger: str) -> bool:
        """Whether ``trigger`` occurs in ``lower``, each asked once per text (rules share them)."""
        if lower is not self._lower:
            self._lower, self._present = lower, {}
        found = self._present.get(trigger)
        if found is None:
            found = self._present[trigger] = trigger in lower
        return found

    def add(self, category: str, flag: str, risk: str, detail: str) -> None:
        key = (category, flag, risk, detail)
        self.tally[key] = self.tally.get(key, 0) + 1

    def matches(self, pattern: re.Pattern[str], text: str) -> Iterator[re.Match[str]]:
        """Non-overlapping matches; past the first chunk, only while the budget lasts."""
        n = len(text)
        if n <= _CHUNK + _OVERLAP:
            yield from pattern.finditer(text)
            return
        last_end = 0
        for start in range(0, n, _CHUNK):
            if start and time.monotonic() >= self.deadline:
                return
            # Windows overlap so a match straddling a chunk edge is still seen whole.
            for m in pattern.finditer(text, start, min(n, start + _CHUNK + _OVERLAP)):
                if m.start() >= start + _CHUNK:
                    break
                if m.start() >= last_end:
                    last_end = m.end()
                    yield m

    def findings(self) -> tuple[Finding, ...]:
        order = {c: i for i, c in enumerate(CATEGORIES)}
        keys = sorted(self.tally, key=lambda k: order.get(k[0], len(order)))
        return tuple(Finding(c, f, r, d if self.tally[(c, f, r, d)] == 1
                             else f"{d} (x{self.tally[(c, f, r, d)]})") for c, f, r, d in keys)


def rules(category: str, flag: str, risk: str, detail: str,
          *alternatives: tuple[tuple[str, ...], str], left: str | None = None,
          accept: Callable[[re.Match[str]], bool] = _always, flags: int = 0,
          tag: str | None = None, unquote: bool = False) -> tuple[Rule, ...]:
    """One rule per (triggers, pattern) alternative, all reporting the same flag."""
    left_re = re.compile(left) if left else None
    return tuple(Rule(category, flag, risk, detail, triggers, re.compile(p, flags), left_re,
                      accept, tag, unquote) for triggers, p in alternatives)


def triggered(rule: Rule, lower: str, scan: Scan) -> bool:
    return not rule.triggers or any(scan.present(lower, t) for t in rule.triggers)


Edit = tuple[int, int, str]  # replace text[start:end] with the string


def edits(text: str, rule: Rule, scan: Scan) -> list[Edit]:
    """Where ``rule`` redacts in ``text``: its ``v`` spans, in order, with its tag."""
    found: list[Edit] = []
    for m in scan.matches(rule.pattern, text):
        if not rule.hit(m):
            continue
        start, end = m.span("v")
        if rule.unquote and end - start >= 2 and text[start] == text[end - 1] in "\"'":
            start, end = start + 1, end - 1
        found.append((start, end, rule.tag or ""))
        scan.add(rule.category, rule.flag, rule.risk, rule.detail)
    return found


@dataclass(frozen=True)
class View:
    """A text as the rules read it, with some of its characters set aside.

    ``aside[i]`` goes back before the character at ``at[i]`` (in order; several may
    share a position): the original is ``text`` with each run put back. Rules match
    ``text``; ``replace`` applies their edits to the text and the runs alike, so
    ``render`` gives the original with only the edits made.
    """

    text: str
    at: tuple[int, ...] = ()
    aside: tuple[str, ...] = ()

    def hide(self, spans: list[tuple[int, int]]) -> View:
        """This view with the characters in ``spans`` (ordered, disjoint) set aside too."""
        if not spans:
            return self
        text = self.text
        starts = [start for start, _ in spans]
        ends = [end for _, end in spans]
        kept = [text[a:b] for a, b in zip([0, *ends], [*starts, len(text)], strict=True)]
        at = tuple(accumulate(map(len, kept[:-1])))
        if not self.at:
            return View("".join(kept), at, tuple(text[a:b] for a, b in spans))
        # Runs set aside before: one inside a span (or at its edge) joins it in its place,
        # one elsewhere moves with the text around it.
        hidden: list[list[str]] = [[] for _ in spans]
        pos = list(starts)  # how far each span's text has been copied into ``hidden``
        moved: list[tuple[int, int, str]] = []  # (new position, order, run)
        for n, (p, run) in enumerate(zip(self.at, self.aside, strict=True)):
            i = bisect_right(starts, p) - 1
            if i >= 0 and p <= ends[i]:
                hidden[i] += [text[pos[i]:p], run]
                pos[i] = p
            else:
                moved.append(((at[i] if i >= 0 else 0) + p - (ends[i] if i >= 0 else 0), n, run))
        runs = [(a, i, "".join(h) + text[p:e])
                for i, (a, h, p, e) in enumerate(zip(at, hidden, pos, ends, strict=True))]
        merged = sorted([*runs, *moved])
        return View("".join(kept), tuple(a for a, _, _ in merged), tuple(r for _, _, r in merged))

    def replace(self, found: list[Edit]) -> View:
        """This view with the edits (ordered, disjoint) made.

        Set-aside runs before or after an edited span stay where they were (a line's
        tag, the colour around a value); those inside it go with it.
        """
        if not found:
            return self
        text, at, aside = self.text, self.at, self.aside
        pieces: list[str] = []
        new_at: list[int] = []
        new_aside: list[str] = []
        gi = last = shift = 0
        for start, end, tag in found:
            keep = bisect_right(at, start, gi)
            new_at += [p + shift for p in at[gi:keep]]
            new_aside += aside[gi:keep]
            gi = bisect_left(at, end, keep)
            pieces += [text[last:start], tag]
            last = end
            shift += len(tag) - (end - start)
        new_at += [p + shift for p in at[gi:]]
        new_aside += aside[gi:]
        pieces.append(text[last:])
        return View("".join(pieces), tuple(new_at), tuple(new_aside))

    def render(self) -> str:
        """The text with the set-aside runs back in place."""
        if not self.at:
            return self.text
        bounds = [0, *self.at, len(self.text)]
        kept = [self.text[a:b] for a, b in pairwise(bounds)]
        return "".join(chain.from_iterable(zip(kept, (*self.aside, ""), strict=True)))
