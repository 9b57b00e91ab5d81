"""Size of the first request a session sends the model: system prompt, tool schemas, messages.

``turnstoned chat`` runs one prompt in a generated workspace (with an ``AGENTS.md``)
against a scripted model server on loopback, at each context window of ``--windows``
(``[model] context_window``); the server records the request. Printed per window: the
characters of the system message, of the tool schemas, of the whole request body, and
its estimated tokens (characters / 4). The anchor is Codex's first request for the same
kind of workspace and prompt, ~41 KB (half of it instructions), measured with its
app-server on this machine (see ../shared/reference/peers.md).

    .venv/bin/python bench/first_request_bench.py [--windows 4096,8192,32768]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fakes.model_server import ScriptedModel, text

CODEX_FIRST_REQUEST = 41_000  # bytes, the anchor
AGENTS = """# Project notes

- Run the tests with `make check` (not pytest directly: it sets up the fixtures).
- Source is in src/, one module per feature; keep functions small.
- Never commit generated files under build/.
"""


def first_request(window: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp, ScriptedModel() as model:
        home, work = Path(tmp, "home"), Path(tmp, "work")
        (home / "config").mkdir(parents=True)
        (home / "config" / "config.toml").write_text(
            f'[model]\nname = "scripted"\nbase_url = "{model.base_url}"\n'
            f"context_window = {window}\n")
        work.mkdir()
        (work / "AGENTS.md").write_text(AGENTS)
        (work / "src").mkdir()
        (work / "src" / "app.py").write_text("def main():\n    return 1\n")
        model.push(text("ok"))
        env = {**os.environ, "TURNSTONED_HOME": str(home), "OPENAI_API_KEY": "sk-bench"}
        for name in ("OPENAI_BASE_URL", "TURNSTONED_MODEL", "TURNSTONED_CONFIG"):
            env.pop(name, None)
        subprocess.run([sys.executable, "-m", "turnstoned", "chat", "--cwd", str(work),
                        "Add a --verbose flag to src/app.py and run the tests."],
                       env=env, check=True, capture_output=True, timeout=120)
        return model.requests[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--windows", default="4096,8192,32768")
    args = ap.parse_args()
    print(f"{'window':>7} {'system':>8} {'tools':>8} {'request':>8} {'~tokens':>8} "
          f"{'vs Codex':>9}")
    for window in (int(w) for w in args.windows.split(",")):
        body = first_request(window)
        system = sum(len(m["content"]) for m in body["messages"] if m["role"] == "system")
        tools = len(json.dumps(body.get("tools") or []))
        whole = len(json.dumps(body))
        print(f"{window:>7} {system:>8,} {tools:>8,} {whole:>8,} {whole // 4:>8,} "
              f"{whole / CODEX_FIRST_REQUEST:>8.2f}x")
    print(f"Codex's first request (the anchor): {CODEX_FIRST_REQUEST:,} bytes")


if __name__ == "__main__":
    main()
