"""`turnstoned attach` and `turnstoned chat` start fast: they import no heavy package."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

from turnstoned import protocol as p

HEAVY = ("pygls", "lsprotocol", "openai", "mcp", "msgspec", "asyncio", "httpx2", "turnstoned.protocol")


def imported_after(code: str, home: Path | None, names: tuple[str, ...] = HEAVY) -> list[str]:
    probe = f"import sys\n{code}\nprint(sorted(m for m in {names!r} if m in sys.modules))"
    env = {k: v for k, v in os.environ.items() if k not in ("TURNSTONED_HOME", "XDG_RUNTIME_DIR")}
    if home is not None:
        env["TURNSTONED_HOME"] = str(home)
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60,
                         env=env, check=True)
    return list(ast.literal_eval(out.stdout))


def test_the_attach_bridge_imports_nothing_heavy(isolated_home: Path) -> None:
    assert imported_after("from turnstoned.cli import main, attach\nfrom turnstoned.daemon import rundir", isolated_home) == []


def test_chat_imports_nothing_heavy(isolated_home: Path) -> None:
    code = "from turnstoned.cli import main, chat\nmain._parser().parse_args(['chat', 'hi'])"
    assert imported_after(code, isolated_home) == []


def test_the_bridge_and_chat_skip_typing_subprocess_and_tempfile() -> None:
    """Each costs a start milliseconds; with no runtime dir in the environment the bridge
    falls back to the temporary directory without importing tempfile."""
    light = ("typing", "subprocess", "tempfile")
    code = "from turnstoned.cli import main, attach\nfrom turnstoned.daemon import rundir\nrundir.runtime_dir()"
    assert imported_after(code, None, light) == []
    assert imported_after("from turnstoned.cli import main, chat", None, light) == []


def test_without_a_runtime_dir_the_socket_lives_in_a_private_folder_of_tmpdir(
        tmp_path: Path) -> None:
    code = "from turnstoned.daemon import rundir\nprint(rundir.runtime_dir())"
    env = {k: v for k, v in os.environ.items() if k not in ("TURNSTONED_HOME", "XDG_RUNTIME_DIR")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={**env, "TMPDIR": str(tmp_path)}, check=True).stdout.strip()
    per_user = Path(f"/run/user/{os.getuid()}")
    if per_user.is_dir():  # a login session's runtime dir wins over the fallback
        assert out == str(per_user / "turnstone")
    else:
        assert out == str(tmp_path / f"turnstone-{os.getuid()}")


def test_every_method_chat_names_is_a_protocol_method() -> None:
    source = Path(__file__).resolve().parents[2].joinpath("turnstoned", "cli", "chat.py").read_text()
    named = set(re.findall(r'"((?:[a-z]+|\$)/[A-Za-z/]+|initialize|initialized|shutdown|exit)"',
                           source))
    assert {"turn/start", "session/start", "item/tool/requestApproval"} <= named
    assert named <= set(p.METHODS_BY_NAME), named - set(p.METHODS_BY_NAME)


def test_a_planted_fallback_runtime_dir_moves_the_socket_home(tmp_path: Path) -> None:
    """Anyone can create `turnstone-<uid>` in a shared /tmp first: refusing it (as the
    daemon does) must not lock its owner out of the resident daemon for good."""
    planted = tmp_path / f"turnstone-{os.getuid()}"
    planted.symlink_to(tmp_path)  # someone else's (a link: never used as ours)
    home = tmp_path / "home"
    home.mkdir()
    code = ("from turnstoned.daemon import rundir\nprint(rundir.runtime_dir())\n"
            "print(rundir.displaced())\nprint(rundir.prepare())")
    env = {k: v for k, v in os.environ.items() if k not in ("TURNSTONED_HOME", "XDG_RUNTIME_DIR")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={**env, "TMPDIR": str(tmp_path), "HOME": str(home)},
                         check=True).stdout.splitlines()
    if Path(f"/run/user/{os.getuid()}").is_dir():
        return  # a login session's runtime dir wins; the fallback is never used
    assert out[0] == str(home / ".cache" / "turnstone" / "run") == out[2]
    assert str(planted) in out[1] and "is a symbolic link" in out[1]
    assert (home / ".cache" / "turnstone" / "run").stat().st_mode & 0o777 == 0o700
