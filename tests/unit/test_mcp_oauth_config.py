"""The ``oauth`` table of an HTTP MCP server entry."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from turnstoned.mcp.config import OAuthSpec, load_servers, parse_entries


def one(entry: dict[str, object], environ: dict[str, str] | None = None
        ) -> tuple[Any, list[str]]:
    specs, issues = load_servers({"s": {"url": "https://mcp.example/mcp", **entry}},
                                 mcp_config_path=None, environ=environ or {})
    return (specs[0] if specs else None), [i.message for i in issues]


def test_no_table_is_oauth_on_a_401_and_false_turns_it_off() -> None:
    assert one({})[0].oauth is None
    assert one({"oauth": False})[0].oauth == OAuthSpec(enabled=False)


def test_a_configured_client_and_scopes_with_variables() -> None:
    spec, issues = one({"oauth": {"client_id": "abc", "client_secret": "${SECRET}",
                                  "scope": "read write"}}, {"SECRET": "s3"})
    assert issues == []
    assert spec.oauth == OAuthSpec(client_id="abc", client_secret="s3", scope="read write")


def test_client_credentials_need_a_secret_or_a_key(tmp_path: Path) -> None:
    _, issues = one({"oauth": {"grant": "client_credentials", "client_id": "m"}})
    assert "needs client_id and client_secret or private_key" in issues[0]
    key = tmp_path / "key.pem"
    key.write_text("-----BEGIN PRIVATE KEY-----\n...\n")
    spec, issues = one({"oauth": {"grant": "client_credentials", "client_id": "m",
                                  "private_key_file": str(key), "signing_algorithm": "ES256"}})
    assert issues == []
    assert spec.oauth.private_key.startswith("-----BEGIN")


def test_bad_tables_disable_the_server_with_the_reason() -> None:
    for entry, words in [
        ({"oauth": "yes"}, "'oauth' must be a table"),
        ({"oauth": {"clientid": "x"}}, "unknown keys: clientid"),
        ({"oauth": {"grant": "password"}}, "'oauth'"),
        ({"oauth": {"client_metadata_url": "http://plain/doc.json"}}, "https://"),
        ({"oauth": {"private_key_file": "/nonexistent/key.pem"}}, "private_key_file"),
    ]:
        spec, issues = one(entry)
        assert spec is None and words in issues[0], (entry, issues)


def test_a_project_file_may_not_name_credentials(tmp_path: Path) -> None:
    table = {"s": {"url": "https://mcp.example/mcp", "oauth": {"client_secret": "${HOME}"}}}
    specs, issues = parse_entries(table, "project:x", project_dir=tmp_path, environ={})
    assert specs == [] and "may not name OAuth credentials" in issues[0].message
    table = {"s": {"url": "https://mcp.example/mcp", "oauth": {"scope": "read"}}}
    specs, issues = parse_entries(table, "project:x", project_dir=tmp_path, environ={})
    assert issues == [] and specs[0].oauth == OAuthSpec(scope="read")
