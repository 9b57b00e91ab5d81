"""Fuzzy file search: a workspace's paths ranked for a few typed letters, at typing speed.

A query matches a path when its characters appear in it in order (case ignored; spaces
separate words that must each match). The regex engine finds the candidates over one
joined string of every path, so a keystroke costs one C-speed scan of the index; only
the candidates are scored in Python, and for a long candidate list only the best of a
cheap first ranking (the match's span) are scored fully. The score favours, in order:
a match in the file name over one spread across folders, matches at word starts
(after ``/ _ - .`` or a case change), contiguous runs, shorter paths, and files used
recently.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

FULL_SCORING = 600  # candidates scored fully per query (the rest are cut by length)
_SEPARATORS = "/_-. "


@dataclass(frozen=True, slots=True)
class Hit:
    path: str
    score: float
    positions: tuple[int, ...]  # matched character offsets in ``path`` (for highlighting)


class FileIndex:
    """The paths of one tree (relative, ``/``-separated), searchable by ``find``.

    Typing narrows: a query that extends the previous one scans only what matched it."""

    def __init__(self, paths: Sequence[str]) -> None:
        self.paths = list(paths)
        self._by_lower: dict[str, list[str]] = {}
        for p in self.paths:
            self._by_lower.setdefault(p.lower(), []).append(p)
        self._all = "\n".join(self._by_lower) + "\n"
        self._last: tuple[str, str] = ("", self._all)

    def __len__(self) -> int:
        return len(self.paths)

    def find(self, query: str, limit: int = 50,
             recent: Mapping[str, float] | None = None) -> list[Hit]:
        words = [w for w in query.lower().split() if w]
        recent = recent or {}
        if not words:
            return [Hit(p, 0.0, ()) for p in _by_recency(self.paths, recent)[:limit]]
        key = " ".join(words)
        if len(key) == 1:  # one letter: the names that start with it, shortest first
            text = _names_starting(self._all, key)
        else:
            text = self._last[1] if key.startswith(self._last[0]) and self._last[0] \
                else self._all
            for word in words:
                text = _narrow(text, word)
            self._last = (key, text)
        lines = text.split("\n")[:-1] if text else []
        if len(lines) > FULL_SCORING:
            # Too many to score: those whose name starts with the query, else the shortest.
            named = _names_starting(text, words[-1]).split("\n")[:-1]
            lines = (named if len(named) >= limit
                     else [*named, *heapq.nsmallest(FULL_SCORING, lines, key=len)])
            lines = heapq.nsmallest(FULL_SCORING, lines, key=len)
            lines += [p.lower() for p in recent if p.lower() in self._by_lower
                      and _all_in(words, p.lower())]
        hits = []
        for lower in dict.fromkeys(lines):
            for path in self._by_lower.get(lower, ()):
                score, positions = score_path(path, words)
                hits.append(Hit(path, score + recent.get(path, 0.0), positions))
        hits.sort(key=lambda h: (-h.score, len(h.path), h.path))
        return hits[:limit]


def _narrow(text: str, word: str) -> str:
    """The lines of ``text`` holding ``word``'s characters in order (one C-speed scan)."""
    # Each gap excludes the character that ends it: the scan never backtracks.
    pattern = re.compile("(?m)^" + "".join(f"[^\n{re.escape(c)}]*{re.escape(c)}" for c in word)
                         + "[^\n]*$")
    found = pattern.findall(text)
    return "\n".join(found) + "\n" if found else ""


def _names_starting(text: str, word: str) -> str:
    """The lines of ``text`` whose file name starts with ``word``."""
    found = re.findall(rf"(?m)^(?:[^\n]*/)?{re.escape(word)}[^\n]*$", text)
    return "\n".join(found) + "\n" if found else ""


def _all_in(words: Sequence[str], text: str) -> bool:
    return all(_subsequence(w, text) for w in words)


def _subsequence(word: str, text: str) -> bool:
    it = iter(text)
    return all(c in it for c in word)


def _by_recency(paths: Sequence[str], recent: Mapping[str, float]) -> list[str]:
    return sorted(paths, key=lambda p: (-recent.get(p, 0.0), len(p), p))


def _word_start(path: str, i: int) -> bool:
    if i == 0:
        return True
    before, here = path[i - 1], path[i]
    return before in _SEPARATORS or (before.islower() and here.isupper())


def score_path(path: str, words: Sequence[str]) -> tuple[float, tuple[int, ...]]:
    """How well ``words`` match ``path`` (higher is better) and where they matched."""
    lower = path.lower()
    name_at = lower.rfind("/") + 1
    total, positions = 0.0, []
    for word in words:
        # Prefer the file name: try to match the whole word there first.
        found = _match(path, lower, word, name_at) or _match(path, lower, word, 0)
        if found is None:
            return -1e9, ()
        score, where = found
        total += score
        positions += where
    total -= len(path) * 0.05 + path.count("/") * 0.5
    return total, tuple(sorted(set(positions)))


def _positions(path: str, lower: str, word: str, start: int, prefer: bool) -> list[int] | None:
    """Where ``word``'s characters fall in ``lower[start:]``, in order: each at the next
    word start or right after the previous one when ``prefer`` (else simply the next)."""
    where: list[int] = []
    at = start
    for c in word:
        j = lower.find(c, at)
        if j == -1:
            return None
        if prefer:
            while j != -1 and not _word_start(path, j) and (not where or j != where[-1] + 1):
                j = lower.find(c, j + 1)
            if j == -1:
                return None
        where.append(j)
        at = j + 1
    return where


def _match(path: str, lower: str, word: str, start: int) -> tuple[float, list[int]] | None:
    """The better of a match at word starts and runs, and the leftmost match."""
    where = (_positions(path, lower, word, start, True)
             or _positions(path, lower, word, start, False))
    if where is None:
        return None
    score = 0.0
    name_at = lower.rfind("/") + 1
    for k, i in enumerate(where):
        score += 1.0
        if _word_start(path, i):
            score += 3.0
        if k and i == where[k - 1] + 1:
            score += 2.0
        if i >= name_at:
            score += 2.0
    if lower[name_at:].startswith(word):
        score += 10.0
    elif word in lower[name_at:]:
        score += 6.0
    elif word in lower:
        score += 3.0
    return score, where
