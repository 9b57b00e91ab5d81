"""Cost of checkpoints on a big workspace: the snapshot a turn takes, an undo, the disk used.

A workspace of ``--files`` files totalling ``--mb`` MB (text of mixed sizes in nested
folders, a `.gitignore`d build folder beside them) is snapshotted the way a turn's first
changing call does it (``ShadowRepo.snapshot``):

- first: the first turn in this workspace (every file read and stored);
- unchanged: a later turn with nothing changed since (the common case);
- after a turn: 10 files edited, 5 created, 5 deleted since the last snapshot;
- undo: what ``turn/undo`` does for that turn (snapshot now, list the changes, restore
  the 20 paths, snapshot again);
- disk: the shadow repository's size after all that, beside the workspace's.

The anchor is a full copy (``cp -a``) of the workspace, what a checkpoint costs without
an incremental store. Medians of ``--runs`` for the repeated cases.

    .venv/bin/python bench/checkpoint_bench.py [--files 10000] [--mb 100] [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from turnstoned.checkpoint import ShadowRepo


def build(root: Path, files: int, total_mb: int) -> None:
    """``files`` text files of random sizes averaging total/files bytes, 50 per folder, of
    lines drawn from a pool (compressing about as source code does)."""
    rng = random.Random(7)
    mean = total_mb * 1_000_000 // files
    words = [f"{w}{i}" for i, w in enumerate(["def", "self", "value", "return", "item"] * 400)]
    pool = [" ".join(rng.choices(words, k=rng.randint(3, 14))) + "\n" for _ in range(20_000)]
    for i in range(files):
        folder = root / f"pkg{i // 500}" / f"mod{(i // 50) % 10}"
        folder.mkdir(parents=True, exist_ok=True)
        size = max(64, int(rng.expovariate(1 / mean)))
        lines = rng.choices(pool, k=size // 76 + 1)  # like source text: ~3:1 compressible
        (folder / f"file{i}.txt").write_text("".join(lines))
    (root / ".gitignore").write_text("build/\n")
    (root / "build").mkdir()
    (root / "build" / "out.bin").write_bytes(os.urandom(1 << 20))


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def timed(fn) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--mb", type=int, default=100)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        work, shadow = Path(tmp, "work"), Path(tmp, "shadow")
        work.mkdir()
        build(work, args.files, args.mb)
        repo = ShadowRepo(shadow, work)
        run = asyncio.new_event_loop().run_until_complete
        work_mb = du(work) / 1e6
        print(f"workspace: {args.files:,} files, {work_mb:.0f} MB "
              f"(+1 MB ignored build output)")

        copy_ms = timed(lambda: subprocess.run(["cp", "-a", str(work), str(Path(tmp, "copy"))],
                                               check=True))
        shutil.rmtree(Path(tmp, "copy"))
        first = timed(lambda: run(repo.snapshot()))
        unchanged = statistics.median(timed(lambda: run(repo.snapshot()))
                                      for _ in range(args.runs))
        names = sorted(work.rglob("file*.txt"))
        after_turn, undo = [], []
        for r in range(args.runs):
            before = run(repo.snapshot()).tree
            for f in names[r * 20:r * 20 + 10]:
                f.write_text(f.read_text() + "edited\n")
            for k in range(5):
                (work / f"new{r}_{k}.txt").write_text("created\n")
            for f in names[r * 20 + 10:r * 20 + 15]:
                f.unlink()
            after_turn.append(timed(lambda: run(repo.snapshot())))

            def take_back(before: str = before) -> None:
                now = run(repo.snapshot()).tree
                changed = [c.path for c in run(repo.changes(before, now))]
                assert len(changed) == 20, changed
                run(repo.restore(before, changed))
                run(repo.snapshot())
            undo.append(timed(take_back))
        shadow_mb = du(shadow) / 1e6

    print(f"full copy (cp -a), the anchor:        {copy_ms:8.1f} ms")
    print(f"first snapshot:                       {first:8.1f} ms")
    print(f"snapshot, nothing changed:            {unchanged:8.1f} ms  (median of {args.runs})")
    print(f"snapshot after a turn (20 files):     {statistics.median(after_turn):8.1f} ms")
    print(f"undo of that turn (20 files):         {statistics.median(undo):8.1f} ms")
    print(f"shadow repository on disk:            {shadow_mb:8.1f} MB "
          f"(the workspace: {work_mb:.0f} MB; git stores compressed objects)")


if __name__ == "__main__":
    main()
