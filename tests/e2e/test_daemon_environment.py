"""An approved command cannot read the daemon's environment or memory through /proc."""

from __future__ import annotations

import json
import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.rawrpc import RawDaemon
from tests.fakes.model_server import ScriptedModel, text, tool_calls
from tests.turnkit import tool_messages

NOBODY = 65534
# Looks for the key in every readable mapping of the daemon; prints what it could do.
MEM_PROBE = r"""
import sys
pid, needle = sys.argv[1], sys.argv[2][::-1].encode()
try:
    maps = open(f"/proc/{pid}/maps").read().splitlines()
    mem = open(f"/proc/{pid}/mem", "rb", buffering=0)
except OSError as exc:
    print("mem probe:", exc.strerror)
    raise SystemExit(0)
for line in maps:
    span, perms = line.split()[:2]
    lo, hi = (int(x, 16) for x in span.split("-"))
    if "r" not in perms or hi - lo > 1 << 28:
        continue
    try:
        mem.seek(lo)
        chunk = mem.read(hi - lo)
    except (OSError, ValueError, OverflowError):
        continue
    if chunk and needle in chunk:
        print("mem probe: key found")
        raise SystemExit(0)
print("mem probe: readable, key not found")
"""


def as_unprivileged(home: Path) -> tuple[str, ...]:
    """Run the daemon as an unprivileged uid when the tests run as root.

    The interpreter lives under /root here, so the daemon keeps CAP_DAC_READ_SEARCH
    to load it; that capability bypasses file permissions but not the ptrace-mode
    checks that guard another process's environ and mem.
    """
    if os.geteuid() != 0:
        return ()
    for path in (home, *home.rglob("*")):
        os.chown(path, NOBODY, NOBODY)
    return ("setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
            "--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search")


@pytest.fixture(params=["unprivileged", "root"])
def daemon(request: pytest.FixtureRequest, model: ScriptedModel, tmp_path: Path
           ) -> Iterator[tuple[RawDaemon, str]]:
    if request.param == "root" and os.geteuid() != 0:
        pytest.skip("the root case needs the tests to run as root")
    home = tmp_path / "home"
    home.mkdir()
    secret = f"zq{uuid.uuid4().hex}"  # shaped like no known key, so only the kernel hides it
    env = {"TURNSTONED_HOME": str(home), "OPENAI_BASE_URL": model.base_url,
           "OPENAI_API_KEY": secret, "TURNSTONED_MODEL": "scripted"}
    prefix = as_unprivileged(home) if request.param == "unprivileged" else ()
    d = RawDaemon(env, cwd=str(tmp_path), prefix=prefix)
    yield d, secret
    d.close()


def test_approved_commands_cannot_read_the_daemon_environment_or_memory(
        daemon: tuple[RawDaemon, str], model: ScriptedModel, tmp_path: Path) -> None:
    d, secret = daemon
    command = (
        "cat /proc/$PPID/envir''on | tr '\\0' '\\n'; echo; "
        "tr '\\0' '\\n' < /proc/self/../$PPID/environ; echo; "
        f"{sys.executable} - \"$PPID\" {secret[::-1]} <<'PY'\n{MEM_PROBE}\nPY\n"
    )
    model.push(tool_calls([("c1", "bash", json.dumps({"command": command}))]), text("done"))
    d.initialize()
    sid = d.result("session/start", {"cwd": str(tmp_path)})["sessionId"]
    tid = d.result("turn/start", {"sessionId": sid,
                                  "input": [{"type": "text", "text": "look"}]})["turnId"]
    done = d.wait_for("turn/completed", lambda p: p["turnId"] == tid, timeout=60)
    assert done["status"] == "completed", d.stderr_lines
    streamed = "".join(p["chunk"] for p in d.of("item/toolCall/outputDelta"))
    item = next(p["item"] for p in d.of("item/completed") if p["item"]["type"] == "toolCall")
    to_model = [m["content"] for r in model.requests for m in tool_messages(r)]
    assert "mem probe:" in streamed, streamed  # the probe ran
    for seen in (streamed, item["output"], *to_model):
        assert secret not in seen
        assert "key found" not in seen
    # The daemon itself still has its key.
    assert model.headers[-1].get("authorization") == f"Bearer {secret}"
