"""Okapi BM25 over short texts (tool, skill and memory descriptions), in pure Python.

Tokenization
    Text is split into chunks on whitespace and punctuation; a chunk may contain
    the identifier connectors ``_ - . / :`` between letters or digits
    (``mcp__github__create_issue``, ``read-only``, ``os.path.join``). Each chunk is
    split into parts at those connectors, at camelCase / PascalCase boundaries
    (an acronym run ends before its last capital: ``HTTPServer`` -> ``http``,
    ``server``) and between letters and digits (``server7`` -> ``server``, ``7``).
    Parts are case-folded. When a chunk splits into several parts, the parts
    joined together are kept as one more token (``createissue`` for
    ``create_issue``, ``createIssue`` and ``create-issue`` alike), so a query
    that names a tool exactly ranks that tool first. The same is done for each
    namespace segment of a chunk (segments are separated by ``__``, ``.``,
    ``/`` or ``:``), so ``create_issue`` also matches the last segment of
    ``mcp__github__create_issue`` as a whole. No stemming, no stop words.

Scoring
    ``idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))`` (never negative) and
    ``w(t, d) = idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))``.
    A document's score is the sum over query tokens; a token repeated in the
    query counts once per occurrence (its weight is multiplied by its query
    count), as in the classic formula, rank-bm25 and the original system.
    Weights are rounded to multiples of 2**-32 and summed as integers, so a
    score does not depend on the order its terms were added in. Only documents
    with a positive score are returned, best first, ties broken by the lower
    document index.

Cost
    Building tokenizes and records postings only; the weights of a term are
    computed the first time a query uses it and then cached, so rebuilding the
    index on every catalog change stays cheap and a query touches only the
    postings of its own terms. Top-k queries skip most of the work for common
    terms (``mcp``, a server name, "the") with MaxScore pruning, which is exact.
"""

from __future__ import annotations

import heapq
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import lru_cache

__all__ = ["BM25Index", "tokenize"]

# A run of letters/digits, optionally joined to more runs by identifier connectors.
_CHUNK_RE = re.compile(r"[^\W_]+(?:[_\-./:]+[^\W_]+)*")
# The same for ASCII text, which matches markedly faster than the Unicode classes.
_ASCII_CHUNK_RE = re.compile(r"[A-Za-z0-9]+(?:[_\-./:]+[A-Za-z0-9]+)*")
# Separators between namespace segments (``mcp__srv__tool``, ``pkg.mod``, ``a/b``).
_SEGMENT_SEP_RE = re.compile(r"_{2,}|[./:]")
# Separators between words inside a segment (snake_case, kebab-case).
_WORD_SEP_RE = re.compile(r"[_\-]+")

_DIGIT, _UPPER, _OTHER = 0, 1, 2

# Term weights are fixed-point integers (units of 2**-32): integer sums do not
# depend on the order of addition, so every evaluation path gives a document
# the same score and pruning bounds are exact.
_ONE = 1 << 32

# (term, count in the query, idf * (k1 + 1) in fixed-point units)
_QueryTerm = tuple[str, int, float]


def tokenize(text: str) -> list[str]:
    """Split ``text`` into BM25 tokens (see the module docstring for the rules)."""
    if text.isascii():
        chunks = _ASCII_CHUNK_RE.findall(text)
    else:
        # Decomposed accents would otherwise break words at the combining mark.
        chunks = _CHUNK_RE.findall(unicodedata.normalize("NFC", text))
    tokens: list[str] = []
    extend = tokens.extend
    for chunk in chunks:
        extend(_chunk_tokens(chunk))
    return tokens


@lru_cache(maxsize=1 << 14)
def _chunk_tokens(chunk: str) -> tuple[str, ...]:
    """Tokens of one chunk: its parts, then the joined forms of split segments and the whole."""
    parts: list[str] = []
    compounds: list[str] = []
    for segment in _SEGMENT_SEP_RE.split(chunk):
        seg_parts = [
            part.casefold()
            for word in _WORD_SEP_RE.split(segment)
            if word
            for part in _word_parts(word)
        ]
        if len(seg_parts) > 1:
            compounds.append("".join(seg_parts))
        parts.extend(seg_parts)
    if len(parts) > 1:
        whole = "".join(parts)
        if whole not in compounds:
            compounds.append(whole)
    return (*parts, *compounds)


def _word_parts(word: str) -> list[str]:
    """Split a run of letters and digits at case and letter/digit boundaries."""
    if word.isalpha():
        if word.islower() or word.isupper() or word.istitle():
            return [word]
    elif word.isdigit():
        return [word]
    return _split_mixed(word)


def _char_class(char: str) -> int:
    """Digit, uppercase letter, or anything else (lowercase and caseless letters)."""
    if char.isdigit():
        return _DIGIT
    return _UPPER if char.isupper() else _OTHER


def _split_mixed(word: str) -> list[str]:
    """camelCase / PascalCase / acronym / digit splitting for a word of mixed classes."""
    parts: list[str] = []
    start = 0
    prev = _char_class(word[0])
    for i in range(1, len(word)):
        cur = _char_class(word[i])
        if cur == prev:
            continue
        if prev == _UPPER and cur == _OTHER:
            # "HTTPServer": the capital before the lowercase run starts the next word.
            if i - 1 > start:
                parts.append(word[start : i - 1])
                start = i - 1
        elif prev == _DIGIT or cur in (_DIGIT, _UPPER):
            parts.append(word[start:i])
            start = i
        prev = cur
    parts.append(word[start:])
    return parts


class BM25Index:
    """An Okapi BM25 index over a fixed list of documents.

    The documents cannot change after construction: build a new index instead
    (cheap). Queries only fill a cache of term weights with values that do not
    depend on the query, so results never depend on which queries ran before.
    """

    __slots__ = ("_b", "_counts", "_k1", "_n", "_norms", "_postings", "_weights")

    def __init__(self, documents: Sequence[str], *, k1: float = 1.5, b: float = 0.75) -> None:
        """Index ``documents``; results refer to documents by their position in it."""
        self._setup([Counter(tokenize(doc)) for doc in documents], None, k1, b)

    @classmethod
    def from_tokens(
        cls, token_lists: Iterable[Iterable[str]], *, k1: float = 1.5, b: float = 0.75
    ) -> BM25Index:
        """Index documents that are already tokenized (queries still go through ``tokenize``)."""
        index = cls.__new__(cls)
        index._setup([Counter(tokens) for tokens in token_lists], None, k1, b)
        return index

    @classmethod
    def from_fields(
        cls,
        records: Sequence[Sequence[str]],
        weights: Sequence[int] | None = None,
        *,
        k1: float = 1.5,
        b: float = 0.75,
    ) -> BM25Index:
        """Index records of text fields, field ``i`` counted ``weights[i]`` times.

        The result equals indexing each record's fields joined by spaces with
        field ``i`` repeated ``weights[i]`` times; a weight of 0 ignores the field.
        Without weights every field counts once.
        """
        if weights is not None and any(w < 0 for w in weights):
            raise ValueError("field weights must not be negative")
        counts: list[Counter[str]] = []
        lengths: list[int] = []
        for position, record in enumerate(records):
            if weights is not None and len(record) > len(weights):
                raise ValueError(f"record {position} has more fields than weights")
            doc: Counter[str] = Counter()
            length = 0
            for field_no, text in enumerate(record):
                weight = 1 if weights is None else weights[field_no]
                tokens = tokenize(text) if weight else []
                for term, tf in Counter(tokens).items():
                    doc[term] += tf * weight
                length += len(tokens) * weight
            counts.append(doc)
            lengths.append(length)
        index = cls.__new__(cls)
        index._setup(counts, lengths, k1, b)
        return index

    def _setup(
        self, counts: list[Counter[str]], lengths: list[int] | None, k1: float, b: float
    ) -> None:
        """Validate the parameters, then record postings and length norms (weights come later)."""
        if not k1 >= 0.0:
            raise ValueError(f"k1 must be >= 0, got {k1}")
        if not 0.0 <= b <= 1.0:
            raise ValueError(f"b must be within [0, 1], got {b}")
        if lengths is None:
            lengths = [counter.total() for counter in counts]
        self._k1 = float(k1)
        self._b = float(b)
        self._n = len(counts)
        self._counts = counts
        avgdl = sum(lengths) / self._n if self._n else 0.0
        self._norms = [self._norm(length, avgdl) for length in lengths]
        postings: dict[str, list[int]] = {}
        for doc_id, counter in enumerate(counts):
            for term in counter:
                docs = postings.get(term)
                if docs is None:
                    postings[term] = [doc_id]
                else:
                    docs.append(doc_id)
        self._postings = postings
        self._weights: dict[str, tuple[dict[int, int], int]] = {}

    def _norm(self, length: int, avgdl: float) -> float:
        """The length-normalised ``k1`` of the BM25 denominator for one document."""
        relative = length / avgdl if avgdl else 0.0
        return self._k1 * (1.0 - self._b + self._b * relative)

    def __len__(self) -> int:
        """Number of indexed documents."""
        return self._n

    def _plan(self, query: str) -> list[_QueryTerm]:
        """The query's indexed terms, highest ``idf * count`` first (ties by term)."""
        plan: list[_QueryTerm] = []
        if not self._n:
            return plan
        for term, count in Counter(tokenize(query)).items():
            docs = self._postings.get(term)
            if docs:
                df = len(docs)
                idf = math.log(1.0 + (self._n - df + 0.5) / (df + 0.5))
                plan.append((term, count, idf * (self._k1 + 1.0) * _ONE))
        plan.sort(key=lambda item: (-item[2] * item[1], item[0]))
        return plan

    def _term_weights(self, term: str, scale: float) -> tuple[dict[int, int], int]:
        """``({doc: w(term, doc)}, max weight)`` for the documents containing ``term`` (cached)."""
        cached = self._weights.get(term)
        if cached is not None:
            return cached
        counts, norms = self._counts, self._norms
        weights: dict[int, int] = {}
        for doc in self._postings[term]:
            tf = counts[doc][term]
            weights[doc] = round(scale * tf / (tf + norms[doc])) or 1
        entry = (weights, max(weights.values()))
        self._weights[term] = entry
        return entry

    def _query_weights(self, term: str, count: int, scale: float) -> dict[int, int]:
        """``{doc: w(term, doc) * count}`` for the documents containing ``term``."""
        weights = self._term_weights(term, scale)[0]
        return weights if count == 1 else {doc: w * count for doc, w in weights.items()}

    def _bound(self, term: str, count: int, scale: float) -> int:
        """An upper bound of ``term``'s contribution to any document's score."""
        cached = self._weights.get(term)
        if cached is not None:
            return cached[1] * count
        # tf / (tf + norm) <= 1, so idf * (k1 + 1) bounds a weight (+1 covers rounding).
        return (int(scale) + 1) * count

    def _add_computed(self, scores: dict[int, int], term: str, count: int, scale: float) -> None:
        """Add ``term``'s weights to the documents in ``scores``, computing them one by one.

        Used for a common term that has to be checked against a few candidates
        only: cheaper than computing its weight for every document containing it.
        """
        counts, norms = self._counts, self._norms
        for doc in scores:
            tf = counts[doc].get(term)
            if tf:
                scores[doc] += (round(scale * tf / (tf + norms[doc])) or 1) * count

    def _accumulate(self, plan: list[_QueryTerm]) -> dict[int, int]:
        """Scores of every document that matches at least one planned term."""
        scores: dict[int, int] = {}
        for term, count, scale in plan:
            scores = _merge(scores, self._query_weights(term, count, scale))
        return scores

    def _accumulate_top(self, plan: list[_QueryTerm], k: int) -> dict[int, int]:
        """Scores of a candidate set that contains the top ``k`` documents (MaxScore).

        Terms are added rarest first. Once the k-th best partial score beats the
        sum of the remaining terms' bounds, a document not yet seen cannot reach
        the top k: the remaining (common) terms are then added to the candidates
        only, and candidates that can no longer reach the k-th score are dropped.
        """
        remaining = [0] * (len(plan) + 1)
        postings_left = [0] * (len(plan) + 1)
        for i in range(len(plan) - 1, -1, -1):
            remaining[i] = remaining[i + 1] + self._bound(*plan[i])
            postings_left[i] = postings_left[i + 1] + len(self._postings[plan[i][0]])
        scores: dict[int, int] = {}
        pruning = False
        for i, (term, count, scale) in enumerate(plan):
            # A check costs about len(scores): make it only when more work than that is
            # left, and when it can succeed (no partial score exceeds the added bounds).
            if (
                len(scores) >= k
                and postings_left[i] > 4 * len(scores)
                and remaining[0] - remaining[i] > remaining[i]
            ):
                floor = heapq.nlargest(k, scores.values())[-1] - remaining[i]
                if floor > 0:
                    pruning = True
                    scores = {doc: score for doc, score in scores.items() if score >= floor}
            if not pruning:
                scores = _merge(scores, self._query_weights(term, count, scale))
            elif term in self._weights or len(self._postings[term]) <= 8 * len(scores):
                _merge_into(scores, self._query_weights(term, count, scale))
            else:
                self._add_computed(scores, term, count, scale)
        return scores

    def scores(self, query: str) -> list[float]:
        """The BM25 score of every document for ``query`` (0.0 where nothing matches)."""
        dense = [0.0] * self._n
        for doc, score in self._accumulate(self._plan(query)).items():
            dense[doc] = score / _ONE
        return dense

    def top(self, query: str, k: int = 5) -> list[tuple[int, float]]:
        """Up to ``k`` ``(document index, score)`` pairs with a positive score, best first.

        Equal scores are ordered by the lower document index.
        """
        if k <= 0:
            return []
        scores = self._accumulate_top(self._plan(query), k)
        if len(scores) <= k:
            chosen: Iterable[int] = scores
        else:
            # Values-only selection is the cheap part; ties at the cut are resolved below.
            threshold = heapq.nlargest(k, scores.values())[-1]
            chosen = [doc for doc, score in scores.items() if score >= threshold]
        ranked = sorted(chosen, key=lambda doc: (-scores[doc], doc))[:k]
        return [(doc, scores[doc] / _ONE) for doc in ranked]

    def search(self, query: str, k: int = 5) -> list[int]:
        """Indices of the up to ``k`` best-matching documents, best first."""
        return [doc for doc, _ in self.top(query, k)]


def _merge(scores: dict[int, int], weights: dict[int, int]) -> dict[int, int]:
    """The sum of two sparse score maps; may reuse ``scores`` but never changes ``weights``.

    Copies the larger map (fast, in C) and walks the smaller one.
    """
    if len(weights) > len(scores):
        merged = dict(weights)
        get = merged.get
        for doc, score in scores.items():
            merged[doc] = get(doc, 0) + score
        return merged
    get = scores.get
    for doc, weight in weights.items():
        scores[doc] = get(doc, 0) + weight
    return scores


def _merge_into(scores: dict[int, int], weights: dict[int, int]) -> None:
    """``scores[doc] += weights[doc]`` for the docs already in ``scores`` only."""
    if len(weights) < len(scores):
        for doc, weight in weights.items():
            if doc in scores:
                scores[doc] += weight
        return
    get = weights.get
    for doc in scores:
        found = get(doc)
        if found is not None:
            scores[doc] += found
