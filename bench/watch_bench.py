"""Watch figures: the stop_on interpreter against Python's eval, refusals, and one poll.

    .venv/bin/python bench/watch_bench.py

Prints medians; asserts nothing. ``eval`` appears here only as the anchor the
interpreter is compared with (restricted builtins, as the original ran
conditions); the daemon never calls it.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.unit.test_condition import ESCAPES, SEED_EXAMPLES
from turnstoned.condition import ConditionError, compile_condition, evaluate
from turnstoned.core.watches import WatchRunner
from turnstoned.store import Store
from turnstoned.store.watches import WatchStore

BUILTINS = {name: __builtins__[name] if isinstance(__builtins__, dict) else getattr(__builtins__, name)
            for name in ("len", "str", "int", "float", "bool", "abs", "min", "max", "any", "all",
                         "isinstance", "sorted")}


def _median_us(fn: object, runs: int = 2000) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1e6


def conditions() -> None:
    big = json.dumps({"state": "MERGED", "mergedAt": "2024", "items": list(range(9000))})
    print(f"output: {len(big)} chars of JSON")
    print("| condition | interpreter | eval (restricted builtins) | ratio |")
    print("| --- | ---: | ---: | ---: |")
    for source, _, code, prev, _ in SEED_EXAMPLES:
        cond = compile_condition(source)
        code_obj = compile(source, "<stop_on>", "eval")

        def ours(cond: object = cond, code: int = code, prev: str | None = prev) -> None:
            evaluate(cond, big, code, prev)  # type: ignore[arg-type]

        def anchor(code_obj: object = code_obj, code: int = code, prev: str | None = prev) -> None:
            env = {"output": big, "data": json.loads(big), "exit_code": code,
                   "prev_output": prev, "changed": big != prev}
            eval(code_obj, {"__builtins__": BUILTINS}, env)

        a, b = _median_us(ours, 300), _median_us(anchor, 300)
        print(f"| `{source}` | {a:.0f} µs | {b:.0f} µs | {a / b:.2f}× |")
    checks = [_median_us(lambda s=s: compile_condition(s), 500) for s, *_ in SEED_EXAMPLES]
    print(f"checking a condition (parse + whitelist): median {statistics.median(checks):.0f} µs")


def refusals() -> None:
    output = json.dumps({"state": "x"}) * 5000
    worst, name = 0.0, ""
    for source in ESCAPES:
        start = time.perf_counter()
        try:
            evaluate(compile_condition(source), output, 0, "prev")
        except ConditionError:
            pass
        took = time.perf_counter() - start
        if took > worst:
            worst, name = took, source
    print(f"escape corpus: {len(ESCAPES)} expressions; slowest refusal {worst * 1e3:.1f} ms "
          f"({name[:60]!r})")


def poll() -> None:
    async def run() -> tuple[float, float]:
        home = Path(tempfile.mkdtemp())
        store = Store(home / "db.sqlite3")
        runner = WatchRunner(WatchStore(store), deliver=lambda w, r: None,
                             cwd_of=lambda _: home, timeout=10, env=lambda: {"PATH": "/usr/bin:/bin"})
        ours, plain = [], []
        for _ in range(30):
            start = time.perf_counter()
            await runner._run("echo ok", home)
            ours.append(time.perf_counter() - start)
            start = time.perf_counter()
            proc = await asyncio.create_subprocess_exec("bash", "-c", "echo ok",
                                                        stdout=asyncio.subprocess.PIPE)
            await proc.communicate()
            plain.append(time.perf_counter() - start)
        store.close()
        return statistics.median(ours) * 1e3, statistics.median(plain) * 1e3

    ours, plain = asyncio.run(run())
    print(f"one poll of `echo ok` (script file, process group, pipes, cleanup): {ours:.1f} ms; "
          f"plain `bash -c`: {plain:.1f} ms ({ours / plain:.2f}×)")


if __name__ == "__main__":
    conditions()
    refusals()
    poll()
