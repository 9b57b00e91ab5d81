"""The output guard reads through line-number prefixes and redacts whole private key blocks."""

from __future__ import annotations

import base64
import hashlib

import pytest

from turnstoned.guard.scan import check


def _body(seed: str, lines: int, width: int) -> list[str]:
    blob = b"".join(hashlib.sha512(f"{seed}{i}".encode()).digest() for i in range(lines * 2))
    text = base64.b64encode(blob).decode()
    return [text[i * width:(i + 1) * width] for i in range(lines)]


RSA_BODY = _body("rsa", 12, 64)
OPENSSH_BODY = _body("openssh", 10, 70)
RSA_KEY = ["-----BEGIN RSA PRIVATE KEY-----", *RSA_BODY, "-----END RSA PRIVATE KEY-----"]
OPENSSH_KEY = ["-----BEGIN OPENSSH PRIVATE KEY-----", *OPENSSH_BODY,
               "-----END OPENSSH PRIVATE KEY-----"]


def numbered(lines: list[str], start: int = 1, width: int = 4) -> str:
    """read_file's format (width 4) or ``cat -n``'s (width 6)."""
    return "\n".join(f"{n:>{width}}\t{line}" for n, line in enumerate(lines, start))


def searched(lines: list[str], path: str = "keys/deploy.pem", start: int = 1) -> str:
    """The search tool's (and grep -n's) ``path:line:content`` format."""
    return "\n".join(f"{path}:{n}:{line}" for n, line in enumerate(lines, start))


def leaked(text: str, body: list[str]) -> list[str]:
    return [line for line in body if line[:24] in text]


@pytest.mark.parametrize("key,body", [(RSA_KEY, RSA_BODY), (OPENSSH_KEY, OPENSSH_BODY)],
                         ids=["rsa", "openssh"])
@pytest.mark.parametrize("form", ["read_file", "cat -n", "search"])
def test_numbered_key_block_is_redacted_whole(key: list[str], body: list[str], form: str) -> None:
    lines = ["# deploy key", *key, "after = 1"]
    text = {"read_file": numbered(lines), "cat -n": numbered(lines, width=6),
            "search": searched(lines)}[form]
    result = check(text)
    assert leaked(result.text, body) == []
    assert result.redacted and "[REDACTED:private_key]" in result.text
    assert "private_key_leak" in result.flags
    assert result.text.splitlines()[0].endswith("# deploy key")
    assert result.text.splitlines()[-1].endswith("after = 1")


@pytest.mark.parametrize("key,body", [(RSA_KEY, RSA_BODY), (OPENSSH_KEY, OPENSSH_BODY)],
                         ids=["rsa", "openssh"])
def test_key_block_with_its_end_cut_off_is_redacted(key: list[str], body: list[str]) -> None:
    window = numbered(key[:7])  # BEGIN and six body lines: a read_file limit=7
    assert leaked(check(window).text, body) == []
    cut = numbered(key[:5]) + "\n\n... [9000 chars truncated — output exceeded 100 char limit] ..."
    result = check(cut)
    assert leaked(result.text, body) == [] and "chars truncated" in result.text


@pytest.mark.parametrize("key,body", [(RSA_KEY, RSA_BODY), (OPENSSH_KEY, OPENSSH_BODY)],
                         ids=["rsa", "openssh"])
def test_key_block_with_its_begin_cut_off_is_redacted(key: list[str], body: list[str]) -> None:
    # The tail of a middle-truncated read, or `tail` of a key file: body lines, then END.
    tail = numbered([*key[4:], "next = 2"], start=5)
    result = check(tail)
    assert leaked(result.text, body) == []
    assert result.text.splitlines()[-1] == f"{5 + len(key) - 4:>4}\tnext = 2"
    plain = check("\n".join(key[3:]))
    assert leaked(plain.text, body) == []


ENV_FILE = ["# local settings", "DEBUG=true", "DB_PASSWORD=hunter2-prod-7731",
            "export STRIPE_SECRET=rk9f7Qa2LmZ0pX", "API_TOKEN='x8F2kLp0qR7s'", "PORT=8080"]
COMPOSE = ["services:", "  db:", "    image: postgres:16", "    environment:",
           "      - POSTGRES_PASSWORD=Sup3rS3cretPw", '      - "MYSQL_ROOT_PASSWORD=r00tPw991"',
           "      - POSTGRES_USER=app", "  cache:", "    environment:",
           "      REDIS_PASSWORD: Rd1sPassw0rd", "      REDIS_PORT: 6379"]


@pytest.mark.parametrize("lines,name,secrets,kept", [
    (ENV_FILE, ".env", ("hunter2-prod-7731", "rk9f7Qa2LmZ0pX", "x8F2kLp0qR7s"),
     ("DEBUG=true", "PORT=8080")),
    (COMPOSE, "docker-compose.yml", ("Sup3rS3cretPw", "r00tPw991", "Rd1sPassw0rd"),
     ("POSTGRES_USER=app", "REDIS_PORT: 6379", "image: postgres:16")),
], ids=["env-file", "compose-list-and-map"])
def test_env_style_secrets_are_redacted_in_every_numbering(
        lines: list[str], name: str, secrets: tuple[str, ...], kept: tuple[str, ...]) -> None:
    for text in ("\n".join(lines), numbered(lines), numbered(lines, width=6),
                 searched(lines, path=name)):
        result = check(text)
        assert [s for s in secrets if s in result.text] == [], text
        assert all(k in result.text for k in kept), result.text
        assert "env_file_leak" in result.flags


def test_numbered_code_is_left_alone() -> None:
    code = ["PASSWORD_MIN_LENGTH=8", "TOKEN_TTL=3600", "SECRET_KEY=os.environ['SECRET_KEY']",
            "API_KEY: str = ''", "def key(self) -> str:", "MAX_TOKENS: 4096",
            "AUTH_TOKEN: ${AUTH_TOKEN}"]
    for text in (numbered(code), searched(code, "settings.py")):
        result = check(text)
        assert not result.redacted, result.text


# How bash, git and read_file deliver lines: the tag, the colour and the sign stay, the key goes.
WRAPPERS = {
    "stderr": "[stderr] {}", "stderr-ansi": "[stderr] \x1b[33m{}\x1b[0m",
    "ansi": "\x1b[31m{}\x1b[0m",
    "diff-added": "+{}", "diff-removed": "-{}", "diff-context": " {}",
    "git-diff-color": "\x1b[31m-{}\x1b[m", "read_file-diff": "  12\t-{}", "indented": "    {}",
}


def wrapped(lines: list[str], shape: str) -> str:
    return "\n".join(WRAPPERS[shape].format(line) for line in lines)


@pytest.mark.parametrize("key,body", [(RSA_KEY, RSA_BODY), (OPENSSH_KEY, OPENSSH_BODY)],
                         ids=["rsa", "openssh"])
@pytest.mark.parametrize("shape", WRAPPERS)
def test_wrapped_key_block_is_redacted_whole_or_cut(key: list[str], body: list[str],
                                                     shape: str) -> None:
    tag = WRAPPERS[shape].format("[REDACTED:private_key]")
    whole = check(wrapped(["# deploy key", *key, "after = 1"], shape)).text
    assert whole == wrapped(["# deploy key", "[REDACTED:private_key]", "after = 1"], shape)
    head = check(wrapped(key[:6], shape)).text  # the end cut off
    assert leaked(head, body) == [] and head == tag
    tail = check(wrapped([*key[4:], "next = 2"], shape)).text  # the beginning cut off
    assert leaked(tail, body) == [] and tail == wrapped(["[REDACTED:private_key]", "next = 2"],
                                                         shape)
