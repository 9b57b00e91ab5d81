#!/usr/bin/env bash
# Run the BM25 benchmark in bench/.venv (created on first use with rank-bm25, bm25s, numpy).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="$here/.venv"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet rank-bm25 bm25s numpy
fi
exec "$venv/bin/python" "$here/bm25_bench.py" "$@"
