"""edit_file on a 10 MB file: prepare (locate, check, build the diff preview) + execute (write).

Three shapes: one edit near the end, a batch of 10 edits spread over the file,
and a replace_all of a token that occurs on every 20th line. Each run restores
the file first (not timed). Median of several runs; LF and CRLF files.

    .venv/bin/python bench/edit_bench.py [--mb 10] [--runs 7]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from turnstoned.tools import edit_file
from turnstoned.tools.base import SessionEnv, ToolContext


def make_text(megabytes: int) -> tuple[str, int]:
    """About ``megabytes`` MB of code-like lines; returns the text and its line count."""
    lines = []
    size = i = 0
    while size < megabytes * 1_000_000:
        token = "TOKEN_X" if i % 20 == 0 else "value"
        line = f"    result_{i} = compute({token}, {i}) + offset  # line {i}\n"
        lines.append(line)
        size += len(line)
        i += 1
    return "".join(lines), i


def shapes(lines: int) -> dict[str, dict[str, Any]]:
    near_end = lines - 5
    batch = [
        {"old_string": f"# line {n}\n", "new_string": f"# line {n} (edited)\n"}
        for n in range(lines // 20, lines, lines // 10)
    ][:10]
    return {
        "single edit near the end": {
            "old_string": f"result_{near_end} = ",
            "new_string": f"renamed_{near_end} = ",
        },
        "batch of 10 edits": {"edits": batch},
        "replace_all": {"old_string": "TOKEN_X", "new_string": "TOKEN_Y", "replace_all": True},
    }


async def one_run(path: Path, data: bytes, args: dict[str, Any]) -> tuple[float, float, str]:
    path.write_bytes(data)
    ctx = ToolContext(env=SessionEnv(session_id="bench", kind="interactive", cwd=path.parent))
    ctx.env.read_set.add(os.path.realpath(path))
    start = time.perf_counter()
    call = edit_file.prepare(edit_file.Args(path=str(path), **args), ctx)
    prepared = time.perf_counter()
    assert call.error is None, call.error
    out = await edit_file.execute(call, ctx)
    done = time.perf_counter()
    assert not out.is_error, out.content
    return prepared - start, done - prepared, out.text()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=10)
    parser.add_argument("--runs", type=int, default=7)
    opts = parser.parse_args()
    text, lines = make_text(opts.mb)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.py"
        for ending in ("LF", "CRLF"):
            data = (text if ending == "LF" else text.replace("\n", "\r\n")).encode()
            print(
                f"\n{ending}: {len(data) / 1e6:.1f} MB, {lines} lines; median of {opts.runs} runs"
            )
            for name, args in shapes(lines).items():
                samples = [asyncio.run(one_run(path, data, args)) for _ in range(opts.runs)]
                prep = statistics.median(s[0] for s in samples) * 1000
                exe = statistics.median(s[1] for s in samples) * 1000
                print(
                    f"  {name:<26} prepare {prep:7.1f} ms  execute {exe:7.1f} ms  "
                    f"total {prep + exe:7.1f} ms   ({samples[0][2].split(': ', 1)[1]})"
                )


if __name__ == "__main__":
    main()
