"""BM25 tokenizer and index: splitting rules, exact scores, ranking, limits and tie-breaks."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest

from turnstoned.search import BM25Index, tokenize

TOOLS = [
    "read_file Read the contents of a file in the workspace, with optional line offset and limit.",
    "write_file Create a new file or overwrite an existing file with the given content.",
    "edit_file Replace an exact string in a file with new text.",
    "bash Run a shell command in the workspace and return its output.",
    "web_fetch Fetch a URL and return the page content as markdown.",
    "mcp__github__search_issues Search GitHub issues and pull requests by keyword.",
    "mcp__github__create_issue Create a new issue in a GitHub repository.",
    "mcp__gitlab__create_issue Open a new issue in a GitLab project.",
]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("create_issue", ["create", "issue", "createissue"]),
        ("list_open_issues", ["list", "open", "issues", "listopenissues"]),
        ("read-only", ["read", "only", "readonly"]),
        ("os.path.join", ["os", "path", "join", "ospathjoin"]),
        ("src/main/app", ["src", "main", "app", "srcmainapp"]),
        ("createIssue", ["create", "issue", "createissue"]),
        ("CreateIssue", ["create", "issue", "createissue"]),
        ("HTTPServer", ["http", "server", "httpserver"]),
        ("getHTTPResponse", ["get", "http", "response", "gethttpresponse"]),
        ("parseJSON", ["parse", "json", "parsejson"]),
        ("XMLHttpRequest", ["xml", "http", "request", "xmlhttprequest"]),
        (
            "mcp__github__create_issue",
            ["mcp", "github", "create", "issue", "createissue", "mcpgithubcreateissue"],
        ),
        ("my-pkg.subMod", ["my", "pkg", "sub", "mod", "mypkg", "submod", "mypkgsubmod"]),
        ("README Files HTTP", ["readme", "files", "http"]),
        ("server7", ["server", "7", "server7"]),
        ("port 8080 and 2 hosts", ["port", "8080", "and", "2", "hosts"]),
        ("utf8Decode", ["utf", "8", "decode", "utf8decode"]),
        ("Hello, world! (really?) yes; no", ["hello", "world", "really", "yes", "no"]),
        ("__init__", ["init"]),
        ("a dot. And -dash- 'quote'", ["a", "dot", "and", "dash", "quote"]),
        ("  \t\n ", []),
        ("!!! --- ...", []),
        ("", []),
        ("Straße CAFÉ", ["strasse", "café"]),
        ("cafe\u0301", ["café"]),
        ("Ünïcödé_Wörter", ["ünïcödé", "wörter", "ünïcödéwörter"]),
        ("Données façadeÉtat", ["données", "façade", "état", "façadeétat"]),
        ("数据 分析", ["数据", "分析"]),
        ("Ελληνικά κείμενα", ["ελληνικά", "κείμενα"]),
    ],
)
def test_tokenize_table(text: str, expected: list[str]) -> None:
    assert tokenize(text) == expected


def test_tokenize_is_case_insensitive_and_style_insensitive() -> None:
    names = ("create_issue", "createIssue", "CREATE-ISSUE", "Create.Issue")
    joined = {tokenize(name)[-1] for name in names}
    assert joined == {"createissue"}
    assert tokenize("Read FILE") == tokenize("read file")


@pytest.mark.parametrize(
    "text",
    ["mcp__github__create_issue HTTPServer", "a.b-c_d/e:f", "x2Y 10:30 __x__", *TOOLS],
)
def test_ascii_and_unicode_paths_agree(text: str) -> None:
    assert tokenize(f"{text} é") == [*tokenize(text), "é"]


def test_tokenize_is_deterministic() -> None:
    text = " ".join(TOOLS)
    assert tokenize(text) == tokenize(text)


def _reference_scores(docs: list[str], query: str, k1: float, b: float) -> list[float]:
    """BM25 written out term by term, for checking the index's arithmetic."""
    tokenized = [tokenize(doc) for doc in docs]
    n = len(docs)
    avgdl = sum(len(toks) for toks in tokenized) / n
    result = []
    for toks in tokenized:
        tf = Counter(toks)
        score = 0.0
        for term in tokenize(query):
            if term not in tf:
                continue
            df = sum(1 for other in tokenized if term in other)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            denom = tf[term] + k1 * (1 - b + b * len(toks) / avgdl)
            score += idf * tf[term] * (k1 + 1) / denom
        result.append(score)
    return result


@pytest.mark.parametrize(("k1", "b"), [(1.5, 0.75), (1.2, 0.0), (0.0, 1.0), (2.0, 0.3)])
def test_scores_match_the_okapi_formula(k1: float, b: float) -> None:
    rng = random.Random(7)
    vocab = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta"]
    docs = [" ".join(rng.choices(vocab, k=rng.randint(1, 12))) for _ in range(30)]
    index = BM25Index(docs, k1=k1, b=b)
    for query in ("alpha", "beta gamma", "theta theta eta", "zeta alpha delta eps"):
        assert index.scores(query) == pytest.approx(_reference_scores(docs, query, k1, b))


def test_idf_never_negative_for_a_term_in_every_document() -> None:
    index = BM25Index(["common a", "common b", "common c"])
    assert all(score > 0 for score in index.scores("common"))
    assert index.search("common", k=3) == [0, 1, 2]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("read a file", [0, 1, 2, 6, 7, 3, 4]),
        ("search github issues", [5, 6]),
        ("create_issue", [6, 7, 1]),
        ("run shell command", [3]),
        ("fetch url", [4]),
        ("open an issue on gitlab", [7, 6, 2, 1]),
        ("file", [1, 2, 0]),
    ],
)
def test_ranking_on_tool_descriptions(query: str, expected: list[int]) -> None:
    assert BM25Index(TOOLS).search(query, k=len(TOOLS)) == expected


@pytest.mark.parametrize("position", range(len(TOOLS)))
def test_exact_tool_name_query_ranks_that_tool_first(position: int) -> None:
    name = TOOLS[position].split()[0]
    assert BM25Index(TOOLS).search(name, k=1) == [position]


def test_exact_name_beats_a_sibling_server_with_the_same_tool() -> None:
    index = BM25Index(TOOLS)
    assert index.search("mcp__gitlab__create_issue", k=2) == [7, 6]
    assert index.search("mcp__github__create_issue", k=2) == [6, 7]


def test_segment_name_query_prefers_the_tool_with_that_name() -> None:
    docs = [
        "mcp__a__list_issues List issues. Also able to create reports about an issue.",
        "mcp__b__create_issue File a bug.",
    ]
    assert BM25Index(docs).search("create_issue", k=2)[0] == 1


def test_k_limits_the_number_of_results() -> None:
    index = BM25Index(TOOLS)
    everything = index.search("read a file", k=100)
    assert len(everything) == 7
    assert index.search("read a file", k=3) == everything[:3]
    assert index.search("read a file") == everything[:5]
    assert index.search("read a file", k=0) == []
    assert index.search("read a file", k=-1) == []


@pytest.mark.parametrize("query", ["", "   ", "!!! ... ---"])
def test_query_without_tokens_returns_nothing(query: str) -> None:
    index = BM25Index(TOOLS)
    assert index.search(query) == []
    assert index.scores(query) == [0.0] * len(TOOLS)


def test_no_match_returns_nothing() -> None:
    index = BM25Index(TOOLS)
    assert index.search("kubernetes deployment") == []
    assert index.top("kubernetes") == []


def test_empty_index() -> None:
    index = BM25Index([])
    assert len(index) == 0
    assert index.search("anything") == []
    assert index.scores("anything") == []


def test_empty_documents_never_match() -> None:
    assert BM25Index(["", "", ""]).search("x") == []
    assert BM25Index(["", "apple", ""]).search("apple") == [1]


def test_equal_scores_are_ordered_by_document_index() -> None:
    docs = ["pear", "apple kiwi", "plum", "apple kiwi", "fig", "apple kiwi", "apple kiwi"]
    index = BM25Index(docs)
    assert index.search("apple", k=10) == [1, 3, 5, 6]
    assert index.search("apple", k=2) == [1, 3]
    assert index.search("kiwi apple", k=3) == [1, 3, 5]


def test_tie_break_with_a_stronger_match_ahead() -> None:
    docs = ["apple kiwi", "apple apple", "apple kiwi", "apple kiwi"]
    index = BM25Index(docs)
    assert index.search("apple", k=3) == [1, 0, 2]
    assert index.search("new issue", k=5) == []
    assert BM25Index(TOOLS).search("new", k=3) == [2, 1, 6]


def test_results_are_stable_across_queries_and_rebuilds() -> None:
    first = BM25Index(TOOLS)
    queries = ["read a file", "github", "create_issue", "return output", "new issue"]
    before = [first.top(q, 8) for q in queries]
    again = [first.top(q, 8) for q in queries]
    rebuilt = [BM25Index(list(TOOLS)).top(q, 8) for q in queries]
    assert before == again == rebuilt


def test_top_scores_agree_with_dense_scores() -> None:
    index = BM25Index(TOOLS)
    dense = index.scores("create a new file")
    top = index.top("create a new file", k=8)
    assert [score for _, score in top] == sorted((s for s in dense if s > 0), reverse=True)
    assert all(dense[doc] == score for doc, score in top)


def test_repeated_query_terms_count_per_occurrence() -> None:
    index = BM25Index(TOOLS)
    single = index.scores("issue")
    double = index.scores("issue issue")
    assert double == [2 * s for s in single]
    assert index.scores("issue github") == pytest.approx(
        [a + b for a, b in zip(single, index.scores("github"), strict=True)]
    )


def test_b_zero_ignores_document_length() -> None:
    docs = ["apple banana cherry date elder fig grape", "apple"]
    assert BM25Index(docs).search("apple", k=2) == [1, 0]
    flat = BM25Index(docs, b=0.0)
    scores = flat.scores("apple")
    assert scores[0] == scores[1]
    assert flat.search("apple", k=2) == [0, 1]


def test_k1_controls_term_frequency_saturation() -> None:
    docs = ["apple apple apple pear", "apple pear pear pear"]
    assert BM25Index(docs).search("apple", k=2) == [0, 1]
    no_tf = BM25Index(docs, k1=0.0).scores("apple")
    assert no_tf[0] == no_tf[1] > 0
    gap_small = _gap(BM25Index(docs, k1=0.5).scores("apple"))
    gap_large = _gap(BM25Index(docs, k1=3.0).scores("apple"))
    assert 0 < gap_small < gap_large


def _gap(scores: list[float]) -> float:
    return scores[0] - scores[1]


@pytest.mark.parametrize(
    ("k1", "b"), [(-0.1, 0.75), (1.5, -0.01), (1.5, 1.01), (float("nan"), 0.5)]
)
def test_invalid_parameters_are_rejected(k1: float, b: float) -> None:
    with pytest.raises(ValueError):
        BM25Index(TOOLS, k1=k1, b=b)


def test_from_fields_equals_repeated_text() -> None:
    records = [(doc.split()[0], " ".join(doc.split()[1:])) for doc in TOOLS]
    weighted = BM25Index.from_fields(records, weights=[3, 1])
    repeated = BM25Index([" ".join([name] * 3 + [desc]) for name, desc in records])
    for query in ("read a file", "create_issue", "github", "return"):
        assert weighted.scores(query) == pytest.approx(repeated.scores(query))
        assert weighted.search(query, k=8) == repeated.search(query, k=8)


def test_from_fields_without_weights_and_with_zero_weight() -> None:
    records = [("alpha", "shared"), ("beta", "shared alpha")]
    plain = BM25Index.from_fields(records)
    joined = BM25Index(["alpha shared", "beta shared alpha"])
    assert plain.scores("alpha") == pytest.approx(joined.scores("alpha"))
    names_only = BM25Index.from_fields(records, weights=[1, 0])
    assert names_only.search("alpha", k=2) == [0]
    assert names_only.search("shared") == []


def test_from_fields_rejects_bad_weights() -> None:
    with pytest.raises(ValueError):
        BM25Index.from_fields([("a", "b", "c")], weights=[1, 1])
    with pytest.raises(ValueError):
        BM25Index.from_fields([("a",)], weights=[-1])


def test_from_tokens_matches_text_construction() -> None:
    by_text = BM25Index(TOOLS)
    by_tokens = BM25Index.from_tokens(tokenize(doc) for doc in TOOLS)
    assert len(by_tokens) == len(TOOLS)
    for query in ("read a file", "create_issue", "mcp__github__search_issues"):
        assert by_tokens.top(query, 8) == by_text.top(query, 8)


def _tool_corpus(size: int, seed: int) -> list[str]:
    """MCP-style tools sharing name tokens, Zipf-like words and some exact duplicates."""
    rng = random.Random(seed)
    words = ["list", "get", "create", "issue", "file", "page", "user", "the", "a", "of", "to", "open", "closed", "repo", "run"]
    weights = [1.0 / rank for rank in range(1, len(words) + 1)]
    docs: list[str] = []
    for _ in range(size):
        if docs and rng.random() < 0.15:
            docs.append(rng.choice(docs))
            continue
        name = f"mcp__server{rng.randrange(6)}__{rng.choice(words)}_{rng.choice(words)}"
        body = " ".join(rng.choices(words, weights=weights, k=rng.randint(3, 20)))
        docs.append(f"{name} {body}")
    return docs


def _brute_force_top(index: BM25Index, query: str, k: int) -> list[tuple[int, float]]:
    dense = index.scores(query)
    ranked = sorted((i for i, score in enumerate(dense) if score > 0), key=lambda i: (-dense[i], i))
    return [(i, dense[i]) for i in ranked[:k]]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_top_k_equals_brute_force_ranking(seed: int) -> None:
    docs = _tool_corpus(400, seed)
    rng = random.Random(seed)
    queries = [doc.split()[0] for doc in rng.sample(docs, 10)]
    queries += ["the", "list open issue", "mcp server", "a of to", "create_issue user file page"]
    queries += ["run the repo run", "closed", "mcp__server3__get_file get"]
    for k in (1, 2, 5, 10, 50):
        cold = BM25Index(docs)
        first = [cold.top(query, k) for query in queries]
        warm = BM25Index(docs)
        expected = [_brute_force_top(warm, query, k) for query in queries]
        assert first == expected
        assert [warm.top(query, k) for query in queries] == expected
        assert [cold.top(query, k) for query in queries] == expected


def test_exact_name_wins_among_many_tools_sharing_name_tokens() -> None:
    docs = _tool_corpus(400, 5)
    index = BM25Index(docs)
    for position in (0, 17, 123, 399):
        name = docs[position].split()[0]
        first = index.search(name, k=1)[0]
        assert docs[first].split()[0] == name
        assert first == docs.index(docs[first])
