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


def imported_after(code: str, home: Path) -> list[str]:
    probe = f"import sys\n{code}\nprint(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "TURNSTONED_HOME": str(home)}, check=True)
    return list(ast.literal_eval(out.stdout))


def test_the_attach_bridge_imports_nothing_heavy(isolated_home: Path) -> None:
    assert imported_after("from turnstoned import cli, attach, rundir", isolated_home) == []


def test_chat_imports_nothing_heavy(isolated_home: Path) -> None:
    code = "from turnstoned import cli, chat\ncli._parser().parse_args(['chat', 'hi'])"
    assert imported_after(code, isolated_home) == []


def test_every_method_chat_names_is_a_protocol_method() -> None:
    source = Path(__file__).resolve().parents[2].joinpath("turnstoned", "chat.py").read_text()
    named = set(re.findall(r'"((?:[a-z]+|\$)/[A-Za-z/]+|initialize|initialized|shutdown|exit)"',
                           source))
    assert {"turn/start", "session/start", "item/tool/requestApproval"} <= named
    assert named <= set(p.METHODS_BY_NAME), named - set(p.METHODS_BY_NAME)
