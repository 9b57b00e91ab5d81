"""Kill the daemon at several points with kill -9, SIGTERM and SIGHUP; count orphans. Prints figures.

    .venv/bin/python bench/orphan_bench.py [--rounds N]

Each kill starts a fresh `python -m turnstoned` (raw JSON-RPC client, scripted
model on 127.0.0.1) and brings up, stage by stage, an MCP stdio server, a
background shell, a foreground bash (with a job in its group and a double-forked
`setsid` escapee) and a search blocked on a FIFO (tests/e2e/orphans.py). The
daemon is then signalled at one of six points; every process it started that is
still alive 10 s later is an orphan, and so is a bash script left in its TMPDIR.
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.e2e.orphans import Outcome, Scene
from tests.fakes.model_server import ScriptedModel

# (name, stages started, seconds to wait before the signal)
POINTS = (
    ("MCP server up", 1, 0.0),
    ("+ background shell", 2, 0.0),
    ("+ foreground bash", 3, 0.0),
    ("all four running", 4, 0.0),
    ("all four, 0.2 s later", 4, 0.2),
    ("all four, 1 s later", 4, 1.0),
)
SIGNALS = (("kill -9", signal.SIGKILL), ("SIGTERM", signal.SIGTERM), ("SIGHUP", signal.SIGHUP))


def one(point: tuple[str, int, float], sig: int) -> Outcome:
    with ScriptedModel() as model, tempfile.TemporaryDirectory() as work:
        scene = Scene(model, Path(work))
        outcome = None
        try:
            outcome = scene.kill(sig, stages=point[1], delay=point[2])
            return outcome
        finally:
            scene.clean_up(outcome)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=1, help="repeat the 18 kills N times")
    args = parser.parse_args()
    kills = orphans = children = scripts = 0
    for _ in range(args.rounds):
        for point in POINTS:
            for name, sig in SIGNALS:
                outcome = one(point, sig)
                kills += 1
                children += len(outcome.children)
                orphans += len(outcome.survivors)
                scripts += len(outcome.scripts_left)
                print(f"{point[0]:<24} {name:<8} children {len(outcome.children):>2}  "
                      f"orphans {len(outcome.survivors)}  scripts left {len(outcome.scripts_left)}",
                      flush=True)
    print(f"\nkills: {kills}  children running at the kill: {children}  "
          f"orphans: {orphans}  scripts left: {scripts}")


if __name__ == "__main__":
    main()
