"""Try turnstoned without a model server: a scripted local model plays one short session.

It starts an OpenAI-compatible server on 127.0.0.1 that answers with a tool call
(`bash: ls`) and then a summary, and runs `turnstoned chat --yes` against it in a
scratch directory, so you see the streamed tool output and answer as an editor would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fakes.model_server import ScriptedModel, text, tool_calls


def main() -> int:
    with tempfile.TemporaryDirectory() as work, tempfile.TemporaryDirectory() as home:
        Path(work, "hello.py").write_text('print("hello from turnstoned")\n')
        Path(work, "README.txt").write_text("A scratch project for the demo.\n")
        with ScriptedModel() as model:
            model.push(
                tool_calls([("call_1", "bash", json.dumps({"command": "ls -l && python3 hello.py"}))]),
                text("The directory holds `hello.py` and `README.txt`; running hello.py printed "
                     "its greeting. Point TURNSTONED_MODEL and OPENAI_BASE_URL at your own "
                     "model server to do real work.", chunk_size=6, delay=0.01),
            )
            env = {**os.environ, "TURNSTONED_HOME": home, "OPENAI_BASE_URL": model.base_url,
                   "OPENAI_API_KEY": "demo", "TURNSTONED_MODEL": "scripted"}
            cmd = [sys.executable, "-m", "turnstoned", "chat", "--yes", "--cwd", work,
                   "What is in this directory? Run the script."]
            print("$ turnstoned chat --yes 'What is in this directory? Run the script.'", flush=True)
            return subprocess.run(cmd, env=env, check=False).returncode


if __name__ == "__main__":
    raise SystemExit(main())
