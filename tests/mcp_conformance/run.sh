#!/usr/bin/env bash
# The official MCP conformance suite's client scenarios, with the daemon as the client
# (driver.py). 0.1.10 is the newest that runs on Node 20; its test servers need
# @modelcontextprotocol/sdk 1.25.2 beside it. The auth/* scenarios are not run: the
# daemon has no OAuth for MCP servers yet.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
python="${PYTHON:-$here/../../.venv/bin/python}"
cd "$here"
npm ci --silent --no-audit --no-fund
failed=0
for scenario in initialize tools_call elicitation-sep1034-client-defaults sse-retry; do
    out=$(npx conformance client --command "$python $here/driver.py" --scenario "$scenario" 2>&1) || true
    if grep -q "OVERALL: PASSED" <<<"$out"; then
        echo "MCP conformance: $scenario passed"
    else
        echo "MCP conformance: $scenario FAILED"; echo "$out" | tail -30; failed=1
    fi
done
exit "$failed"
