"""The generated client bindings compile (TypeScript) and load (Neovim's Lua).

Each check needs its tool: ``tsc`` (``$TURNSTONED_TSC``, ``clients/vscode/node_modules``, or
PATH) and ``nvim`` (``$TURNSTONED_NVIM``, PATH, or next to this Python). Without it the test
is skipped with a reason naming what is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from turnstoned import protocol as p
from turnstoned import schema


def _tool(env: str, name: str, *extra: Path) -> str | None:
    candidates = [os.environ.get(env, ""), *(str(x) for x in extra)]
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))


def test_generated_typescript_compiles_strict() -> None:
    tsc = _tool("TURNSTONED_TSC", "tsc",
                schema.ROOT / "clients" / "vscode" / "node_modules" / ".bin" / "tsc")
    if tsc is None:
        pytest.skip("tsc not found ($TURNSTONED_TSC, clients/vscode/node_modules/.bin or PATH): "
                    "clients/vscode/src/protocol.ts was NOT compile-checked")
    out = subprocess.run([tsc, "--noEmit", "--strict", "--target", "es2020", str(schema.TS_FILE)],
                         capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stdout + out.stderr


_LUA_PROBE = """
local path = arg[1]
local M = assert(loadfile(path))()
local names = {}
for _, name in pairs(M.methods) do names[#names + 1] = name end
table.sort(names)
io.stdout:write(vim.json.encode({
  version = M.PROTOCOL_VERSION, revision = M.PROTOCOL_REVISION, methods = names,
  directions = vim.tbl_count(M.directions), codes = M.error_codes,
}))
"""


def test_generated_lua_loads_in_neovim(tmp_path: Path) -> None:
    nvim = _tool("TURNSTONED_NVIM", "nvim")
    if nvim is None:
        pytest.skip("nvim not found ($TURNSTONED_NVIM, PATH or beside this Python): "
                    "clients/neovim/lua/turnstoned/protocol.lua was NOT load-checked")
    probe = tmp_path / "probe.lua"
    probe.write_text(_LUA_PROBE)
    out = subprocess.run([nvim, "--headless", "--clean", "-l", str(probe), str(schema.LUA_FILE)],
                         capture_output=True, text=True, timeout=60, check=False,
                         env={**os.environ, "XDG_STATE_HOME": str(tmp_path),
                              "XDG_DATA_HOME": str(tmp_path)})
    assert out.returncode == 0, out.stdout + out.stderr
    loaded = json.loads(out.stdout)
    assert loaded["version"] == p.PROTOCOL_VERSION and loaded["revision"] == p.PROTOCOL_REVISION
    assert loaded["methods"] == sorted(m.name for m in p.METHODS)
    assert loaded["directions"] == len(p.METHODS)
    assert loaded["codes"] == {code.name: int(code) for code in p.ErrorCode}
