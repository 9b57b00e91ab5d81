"""A stdio MCP server that echoes a key (on stderr, or in an error it answers with) never
gets that key into its status error or into the log lines the editor sees."""

from __future__ import annotations

import logging
import sys

import pytest

from tests.mcp_servers.harness import fast_manager, running
from turnstoned.mcp.config import ServerSpec

KEY = "sk-proj-" + "Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LmNbVcXz1Q"
ENV_TOKEN = "OPENAI_API_KEY=" + "a8F3kL9zQ2xW7vB4nM6pR1tY5uE0iO3s"
SECRETS = (KEY[8:20], "a8F3kL9zQ2xW7vB4")

# Fails to start: says why on stderr, quoting what it was given, and exits.
PRINTS_THE_KEY_AND_EXITS = (
    "import sys\n"
    f"print('auth failed: upstream refused {KEY}', file=sys.stderr, flush=True)\n"
    f"print('hint: export {ENV_TOKEN}', file=sys.stderr, flush=True)\n"
    "sys.exit(3)\n"
)
# Speaks JSON-RPC, but answers every request (initialize first) with an error naming the key.
ANSWERS_WITH_THE_KEY = (
    "import json, sys\n"
    "for line in sys.stdin:\n"
    "    message = json.loads(line)\n"
    "    if 'id' in message:\n"
    "        error = {'code': -32001, 'message': 'invalid credentials "
    f"{KEY} ({ENV_TOKEN})'}}\n"
    "        print(json.dumps({'jsonrpc': '2.0', 'id': message['id'], 'error': error}),"
    " flush=True)\n"
)


def spec(name: str, script: str) -> ServerSpec:
    return ServerSpec(name=name, type="stdio", command=sys.executable, args=["-c", script])


def assert_clean(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, text


async def test_stderr_that_echoes_a_key_is_redacted_in_the_status_and_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="turnstoned")
    async with running(
        fast_manager([spec("leaky", PRINTS_THE_KEY_AND_EXITS)], backoff_base=30.0)
    ) as manager:
        (status,) = manager.status()
    assert status.status == "failed"
    error = status.error or ""
    assert "auth failed: upstream refused [REDACTED" in error
    assert "OPENAI_API_KEY=[REDACTED" in error
    assert_clean(error)
    lines = [r.getMessage() for r in caplog.records]
    assert any("[leaky] auth failed" in line for line in lines)
    for line in lines:
        assert_clean(line)


async def test_an_error_answer_that_echoes_a_key_is_redacted_in_the_status_and_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="turnstoned")
    async with running(
        fast_manager([spec("answers", ANSWERS_WITH_THE_KEY)], backoff_base=30.0)
    ) as manager:
        (status,) = manager.status()
    assert status.status == "failed"
    error = status.error or ""
    assert "invalid credentials [REDACTED" in error and "(code -32001)" in error
    assert_clean(error)
    for record in caplog.records:
        assert_clean(record.getMessage())
