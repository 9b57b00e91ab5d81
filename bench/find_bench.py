"""Fuzzy file search on a 100,000-file workspace: per keystroke, beside fzf.

A generated tree of ``--files`` files (nested folders of source-like names, a
``.gitignore``d build folder beside them) is indexed as ``workspace/findFiles`` does
(ripgrep's listing, then ``search.fuzzy.FileIndex``); then each query of ``QUERIES`` is
typed a letter at a time and every keystroke is timed (the index narrows as the query
grows). The anchors: ``rg --files | fzf --filter=QUERY`` for the whole query (what a
shell user runs), and ``fzf --filter`` alone over the saved listing, per keystroke.

    .venv/bin/python bench/find_bench.py [--files 100000]
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from turnstoned.core.finder import list_files
from turnstoned.search.fuzzy import FileIndex

WORDS = ["src", "lib", "core", "util", "api", "test", "model", "view", "handler", "config",
         "server", "client", "render", "parse", "index", "store", "auth", "cache", "http",
         "query", "event", "session", "widget", "schema"]
QUERIES = ["hand", "confsrv", "sesshttp", "modelview", "utilcache12"]


def build(root: Path, files: int) -> None:
    rng = random.Random(3)
    for i in range(files):
        depth = rng.randint(1, 4)
        folder = root.joinpath(*(rng.choice(WORDS) for _ in range(depth)))
        folder.mkdir(parents=True, exist_ok=True)
        stem = rng.choice(WORDS) + ("_" + rng.choice(WORDS) if rng.random() < 0.4 else "")
        (folder / f"{stem}{i}.{rng.choice(['py', 'ts', 'rs', 'go', 'md'])}").touch()
    (root / ".gitignore").write_text("build/\n")
    (root / "build").mkdir(exist_ok=True)
    for i in range(1000):
        (root / "build" / f"out{i}.o").touch()


def ms(seconds: float) -> str:
    return f"{seconds * 1000:7.1f} ms"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=100_000)
    args = ap.parse_args()
    fzf = shutil.which("fzf")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        build(root, args.files)
        t = time.perf_counter()
        paths = list_files(root)
        listed = time.perf_counter() - t
        t = time.perf_counter()
        index = FileIndex(paths)
        indexed = time.perf_counter() - t
        print(f"workspace: {len(paths):,} files indexed (build/ ignored); ripgrep's listing "
              f"{ms(listed)}, index {ms(indexed)}")
        listing = root / ".listing"
        listing.write_text("\n".join(paths) + "\n")
        ours, theirs, pipes = [], [], []
        for query in QUERIES:
            for n in range(1, len(query) + 1):
                t = time.perf_counter()
                index.find(query[:n], 50)
                ours.append(time.perf_counter() - t)
                if fzf:
                    t = time.perf_counter()
                    with listing.open("rb") as f:
                        subprocess.run([fzf, "--filter", query[:n]], stdin=f,
                                       capture_output=True, check=False)
                    theirs.append(time.perf_counter() - t)
            if fzf:
                t = time.perf_counter()
                subprocess.run(f"rg --files | {fzf} --filter={query}", shell=True, cwd=root,
                               capture_output=True, check=False)
                pipes.append(time.perf_counter() - t)
            best = index.find(query, 1)
            print(f"  {query!r:14} best: {best[0].path if best else '-'}")
    print(f"per keystroke, workspace/findFiles: median {ms(statistics.median(ours))}, "
          f"max {ms(max(ours))} ({len(ours)} keystrokes)")
    if fzf:
        print(f"per keystroke, fzf --filter over the listing: median "
              f"{ms(statistics.median(theirs))}, max {ms(max(theirs))}")
        print(f"rg --files | fzf --filter, per query: median {ms(statistics.median(pipes))}")
    else:
        print("fzf is not installed: no anchor (apt-get install fzf)")


if __name__ == "__main__":
    main()
