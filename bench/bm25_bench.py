"""Build and query time of turnstoned's BM25 index against rank-bm25 and bm25s.

Run it with ``bench/run_bm25.sh`` (creates ``bench/.venv`` with the competitors),
or with any Python: competitors that are not importable are reported as
"not installed". Every library gets the same tokens (turnstoned's tokenizer), and
every timed query includes tokenizing the query and selecting the top k.

    python bench/bm25_bench.py [--sizes 1000 10000] [--queries 200] [--k 5]
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from turnstoned.search.bm25 import BM25Index, _chunk_tokens, tokenize

VERBS = ["list", "get", "create", "update", "delete", "search", "find", "read", "write", "open", "close", "merge", "fetch", "run", "start", "stop", "restart", "deploy", "build", "test", "lint", "format", "upload", "download", "sync", "clone", "push", "pull", "query", "export", "import", "archive", "restore", "assign", "label", "comment", "review", "approve", "schedule", "cancel"]
NOUNS = ["issue", "issues", "pull", "request", "branch", "commit", "repository", "repo", "file", "files", "directory", "folder", "page", "document", "table", "row", "column", "record", "user", "users", "team", "project", "task", "tasks", "ticket", "message", "channel", "thread", "email", "calendar", "event", "meeting", "invoice", "payment", "customer", "order", "product", "database", "query", "index", "cluster", "pod", "container", "image", "volume", "secret", "config", "log", "logs", "metric", "metrics", "alert", "dashboard", "report", "chart", "note", "notes", "tag", "release", "version", "workflow", "job", "pipeline", "artifact", "bucket", "object", "key", "value", "cache", "queue", "topic", "webhook", "token", "session", "permission", "role", "group", "member", "comment", "comments", "attachment", "snapshot"]
ADJECTIVES = ["open", "closed", "new", "existing", "current", "recent", "all", "active", "pending", "failed", "running", "public", "private", "remote", "local", "shared", "archived", "draft", "default", "primary", "latest", "single", "multiple", "given", "specified", "matching", "related", "optional", "required"]
FILLER = ["the", "a", "an", "of", "to", "for", "in", "on", "with", "by", "from", "and", "or", "that", "this", "its", "as", "at", "into", "using", "returns", "matching", "optional", "between", "within"]
SERVERS = 40


def _zipf_table(words: Sequence[str], rng: random.Random) -> tuple[list[str], list[float]]:
    """Words in a seeded random order with cumulative 1/rank weights (a Zipf-like mix)."""
    shuffled = list(words)
    rng.shuffle(shuffled)
    cumulative: list[float] = []
    total = 0.0
    for rank in range(1, len(shuffled) + 1):
        total += 1.0 / rank
        cumulative.append(total)
    return shuffled, cumulative


def make_corpus(size: int, seed: int = 1234) -> tuple[list[str], list[str]]:
    """``size`` synthetic MCP tool names and ``"<name> <15-40 word description>"`` texts."""
    rng = random.Random(seed)
    vocab, cum = _zipf_table(VERBS + NOUNS + ADJECTIVES + FILLER, rng)
    names: list[str] = []
    texts: list[str] = []
    seen: set[str] = set()
    while len(names) < size:
        name = (
            f"mcp__server{rng.randrange(SERVERS)}__{rng.choice(VERBS)}_"
            f"{rng.choice(ADJECTIVES)}_{rng.choice(NOUNS)}"
        )
        if name in seen:
            name = f"{name}{len(names)}"
        seen.add(name)
        words = rng.choices(vocab, cum_weights=cum, k=rng.randint(15, 40))
        names.append(name)
        texts.append(f"{name} {' '.join(words).capitalize()}.")
    return names, texts


def make_queries(names: Sequence[str], count: int, seed: int = 99) -> list[str]:
    """A mix of keyword queries, phrase queries with filler words and exact tool names."""
    rng = random.Random(seed)
    queries: list[str] = []
    for i in range(count):
        kind = i % 4
        if kind == 0:
            queries.append(rng.choice(names))
        elif kind == 1:
            queries.append(f"{rng.choice(VERBS)} {rng.choice(NOUNS)}")
        elif kind == 2:
            words = [rng.choice(VERBS), "the", rng.choice(ADJECTIVES), rng.choice(NOUNS)]
            queries.append(" ".join(words))
        else:
            queries.append(" ".join(rng.sample(NOUNS + VERBS, rng.randint(3, 5))))
    return queries


@dataclass
class Result:
    """Figures for one library at one corpus size (seconds)."""

    name: str
    build: float | None = None
    cold: float | None = None
    warm: float | None = None
    note: str = ""


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def _best_of(fn: Callable[[], Any], repeat: int = 3) -> tuple[float, Any]:
    """The fastest of ``repeat`` runs (less sensitive to a busy machine) and its result."""
    runs = [_timed(fn) for _ in range(repeat)]
    return min(runs, key=lambda run: run[0])


def _query_medians(
    search: Callable[[str], list[int]], queries: Sequence[str]
) -> tuple[float, float]:
    """Median latency on the first pass over the queries and on three later passes."""
    cold = [_timed(lambda q=q: search(q))[0] for q in queries]
    warm = [_timed(lambda q=q: search(q))[0] for _ in range(3) for q in queries]
    return statistics.median(cold), statistics.median(warm)


def _numpy_top(np: Any, scores: Any, k: int) -> list[int]:
    """Top k positive scores of a numpy vector, best first, ties by lower index."""
    if len(scores) > k:
        candidates = np.argpartition(-scores, k - 1)[:k]
    else:
        candidates = np.arange(len(scores))
    ordered = candidates[np.lexsort((candidates, -scores[candidates]))]
    return [int(doc) for doc in ordered if scores[doc] > 0]


def bench_ours(texts: list[str], tokens: list[list[str]], queries: list[str], k: int) -> Result:
    """turnstoned: build from text (tokenizing included) and query with ``search``."""

    def build_from_text() -> BM25Index:
        _chunk_tokens.cache_clear()  # time the tokenizer without the corpus already cached
        return BM25Index(texts)

    build, index = _best_of(build_from_text)
    cold, warm = _query_medians(lambda q: index.search(q, k), queries)
    from_tokens, _ = _best_of(lambda: BM25Index.from_tokens(tokens))
    return Result(
        "turnstoned", from_tokens, cold, warm, f"build incl. tokenize {build * 1e3:.1f} ms"
    )


def bench_rank_bm25(tokens: list[list[str]], queries: list[str], k: int) -> Result:
    """rank-bm25's BM25Okapi (numpy, dense scores per query; its own IDF variant)."""
    try:
        import numpy as np
        from rank_bm25 import BM25Okapi
    except ImportError:
        return Result("rank-bm25", note="not installed")
    build, index = _best_of(lambda: BM25Okapi(tokens, k1=1.5, b=0.75))
    cold, warm = _query_medians(lambda q: _numpy_top(np, index.get_scores(tokenize(q)), k), queries)
    return Result("rank-bm25", build, cold, warm, "BM25Okapi.get_scores + argpartition")


def _bm25s_index(bm25s: Any, tokens: list[list[str]]) -> Any:
    index = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    index.index(tokens, show_progress=False)
    return index


def bench_bm25s(tokens: list[list[str]], queries: list[str], k: int) -> list[Result]:
    """bm25s (sparse matrix of precomputed scores), via ``retrieve`` and via ``get_scores``."""
    try:
        import bm25s
        import numpy as np
    except ImportError:
        return [Result("bm25s", note="not installed")]
    build, index = _best_of(lambda: _bm25s_index(bm25s, tokens))

    def retrieve(query: str) -> list[int]:
        docs, scores = index.retrieve([tokenize(query)], k=k, show_progress=False)
        return [int(d) for d, s in zip(docs[0], scores[0], strict=True) if s > 0]

    cold, warm = _query_medians(retrieve, queries)
    low_cold, low_warm = _query_medians(
        lambda q: _numpy_top(np, index.get_scores(tokenize(q)), k), queries
    )
    return [
        Result("bm25s", build, cold, warm, "retrieve(k)"),
        Result("bm25s (get_scores)", build, low_cold, low_warm, "get_scores + argpartition"),
    ]


def agreement(texts: list[str], tokens: list[list[str]], queries: list[str], k: int) -> str:
    """How often bm25s (same IDF, float32 scores) returns the same top k as turnstoned."""
    try:
        import bm25s
        import numpy as np
    except ImportError:
        return "bm25s not installed: agreement not checked"
    ours = BM25Index(texts)
    theirs = _bm25s_index(bm25s, tokens)
    same = same_scores = 0
    for query in queries:
        mine = ours.top(query, k)
        raw = theirs.get_scores(tokenize(query))
        other = _numpy_top(np, raw, k)
        same += [doc for doc, _ in mine] == other
        # bm25s's lucene variant omits the constant (k1 + 1) factor.
        rescaled = [float(raw[doc]) * 2.5 for doc in other]
        same_scores += len(mine) == len(rescaled) and all(
            abs(a - b) <= 1e-4 * max(1.0, a) for (_, a), b in zip(mine, rescaled, strict=True)
        )
    return (
        f"vs bm25s: top-{k} identical for {same}/{len(queries)} queries; "
        f"score lists equal (1e-4) for {same_scores}/{len(queries)} "
        "(the rest differ only in the order of tied documents: float32)"
    )


def _ms(value: float | None) -> str:
    return f"{'-':>9}" if value is None else f"{value * 1e3:9.3f}"


def run(size: int, query_count: int, k: int) -> None:
    """Print the table for one corpus size."""
    names, texts = make_corpus(size)
    queries = make_queries(names, query_count)
    tokenize_time, tokens = _timed(lambda: [tokenize(text) for text in texts])
    vocab = len({t for doc in tokens for t in doc})
    avg = sum(map(len, tokens)) / size
    print(
        f"\n## {size} tools ({vocab} distinct tokens, {avg:.1f} tokens/doc), "
        f"{len(queries)} queries, k={k}"
    )
    print(f"tokenize corpus (shared by all, turnstoned tokenizer): {tokenize_time * 1e3:.1f} ms")
    gc.collect()
    results = [bench_ours(texts, tokens, queries, k)]
    results.append(bench_rank_bm25(tokens, queries, k))
    results.extend(bench_bm25s(tokens, queries, k))
    print(f"{'library':<20} {'build ms':>9} {'q cold ms':>9} {'q warm ms':>9}  note")
    for res in results:
        print(f"{res.name:<20} {_ms(res.build)} {_ms(res.cold)} {_ms(res.warm)}  {res.note}")
    print(agreement(texts, tokens, queries, k))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="BM25 build and query benchmark")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--k", type=int, default=5)
    args = parser.parse_args(argv)
    print(
        f"python {sys.version.split()[0]}; build = index from tokens (best of 3); "
        "query = tokenize + score + top k (median)"
    )
    print(
        "q cold = first pass over the queries (turnstoned computes a term's weights on "
        "first use); q warm = median of 3 later passes"
    )
    for size in args.sizes:
        run(size, args.queries, args.k)


if __name__ == "__main__":
    main()
