"""The ACP front's figures: `turnstoned acp` spawned, initialize, session/new, a prompt.

    .venv/bin/python bench/acp_bench.py --runs 7

Each run spawns a fresh process with an empty TURNSTONED_HOME; the model is the scripted
server of tests/fakes (in this process, on a thread) answering a 2,000-token reply. Prints
the median and the range of each figure; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.acpkit import RawAcp, model_env
from tests.fakes.model_server import ScriptedModel, token_text

FIGURES = ("spawn → initialize answered", "initialize → session/new answered",
           "first prompt → first agent_message_chunk", "first prompt → end_turn (2,000 tokens)",
           "second prompt → first agent_message_chunk")


async def one_run(model: ScriptedModel, tokens: int) -> list[float]:
    home = Path(tempfile.mkdtemp(prefix="acp-bench-"))
    (home / "config").mkdir()
    (home / "config" / "config.toml").write_text("")
    workspace = Path(tempfile.mkdtemp(prefix="acp-bench-ws-"))
    model.default = lambda request: token_text(tokens)
    started = time.perf_counter()
    client = await RawAcp.start(model_env(model, home))
    try:
        await client.initialize()
        initialized = time.perf_counter()
        sid = await client.new_session(workspace)
        created = time.perf_counter()
        asking = asyncio.get_running_loop().create_task(client.prompt(sid, "hello", timeout=60))
        await client.wait_for(lambda: client.of("agent_message_chunk", sid), timeout=60)
        first = time.perf_counter()
        done = await asking
        ended = time.perf_counter()
        assert done["stopReason"] == "end_turn"
        seen = len(client.of("agent_message_chunk", sid))
        again = time.perf_counter()
        asking = asyncio.get_running_loop().create_task(client.prompt(sid, "again", timeout=60))
        await client.wait_for(lambda: len(client.of("agent_message_chunk", sid)) > seen, 60)
        second = time.perf_counter()
        await asking
    finally:
        await client.close()
    return [initialized - started, created - initialized, first - created, ended - created,
            second - again]


async def main(runs: int, tokens: int) -> None:
    with ScriptedModel(record=False) as model:
        await one_run(model, tokens)  # warm-up: the page cache, compiled bytecode
        samples = [await one_run(model, tokens) for _ in range(runs)]
    print(f"turnstoned acp, {runs} runs (median, range):")
    for n, name in enumerate(FIGURES):
        values = sorted(s[n] * 1000 for s in samples)
        print(f"  {name:<40} {statistics.median(values):7.0f} ms   "
              f"({values[0]:.0f}–{values[-1]:.0f})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--tokens", type=int, default=2000)
    args = parser.parse_args()
    asyncio.run(main(args.runs, args.tokens))
