#!/usr/bin/env bash
# The VS Code extension's checks from a clean checkout: install from the lock file, type check,
# bundle, unit and protocol tests (against the repository's daemon in ../../.venv), the chat page
# in headless Chromium, and the .vsix.
set -euo pipefail
cd "$(dirname "$0")"
start=$SECONDS

if [[ -z ${CHROMIUM:-} ]] && ! command -v chromium >/dev/null 2>&1; then
    (apt-get update -qq && apt-get install -y -qq chromium) >/dev/null
fi
export CHROMIUM=${CHROMIUM:-$(command -v chromium)}

npm ci --no-audit --no-fund --loglevel=error
npx tsc --noEmit -p .
node esbuild.mjs
npx vitest run
npx vitest run --config vitest.browser.mts
# vsce runs `vscode:prepublish`: the bundle and the daemon's wheel (dist/daemon/), which must ship.
TURNSTONED_REQUIRE_WHEEL=1 npx vsce package --no-dependencies --skip-license --allow-missing-repository -o dist/turnstoned.vsix
python3 -m zipfile -l dist/turnstoned.vsix | grep -q 'extension/dist/daemon/turnstoned-.*\.whl' || { echo "the .vsix has no daemon wheel" >&2; exit 1; }
echo "clients/vscode: install, type check, unit, protocol and browser tests, .vsix: $((SECONDS - start)) s"

# The extension in a real VS Code (code-server), unless told not to.
if [[ ${TURNSTONED_SKIP_CODE_SERVER:-0} != 1 ]]; then
    test/e2e-code-server.sh
fi
echo "clients/vscode: checks passed in $((SECONDS - start)) s"
