"""The output guard's machinery: rules (a pattern, its flag, when it runs, what it redacts)
and the per-call scan that applies them within a time budget (see ``core.guard``)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

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

    ``left`` is a one-character class that must not precede the match. A rule
    with a ``tag`` redacts: its named group ``v`` is replaced by the tag. The rule
    runs only if one of its lower-case ``triggers`` occurs in the text.
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

    def hit(self, m: re.Match[str]) -> bool:
        at = m.start()
        if self.left is not None and at and self.left.match(m.string, at - 1):
            return False
        return self.accept(m)


class Scan:
    """Per-call state: the deadline and a tally of what was seen."""

    def __init__(self, budget_seconds: float) -> None:
        self.deadline = time.monotonic() + budget_seconds
        self.tally: dict[tuple[str, str, str, str], int] = {}

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
          tag: str | None = None) -> tuple[Rule, ...]:
    """One rule per (triggers, pattern) alternative, all reporting the same flag."""
    left_re = re.compile(left) if left else None
    return tuple(Rule(category, flag, risk, detail, triggers, re.compile(p, flags), left_re,
                      accept, tag) for triggers, p in alternatives)


def triggered(rule: Rule, lower: str) -> bool:
    return not rule.triggers or any(t in lower for t in rule.triggers)


def redact(text: str, rule: Rule, scan: Scan) -> str:
    pieces: list[str] = []
    last = 0
    for m in scan.matches(rule.pattern, text):
        if not rule.hit(m):
            continue
        pieces += [text[last:m.start("v")], rule.tag or ""]
        last = m.end("v")
        scan.add(rule.category, rule.flag, rule.risk, rule.detail)
    return "".join(pieces) + text[last:] if pieces else text
