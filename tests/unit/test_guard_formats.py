"""The output guard's credential matrix: each format in each output shape is redacted.

Formats: the common credential shapes (tokens with a vendor prefix, webhook URLs,
config-file lines that carry a password, private key blocks). Contents: how the
value sits in a line (prose, an env line, JSON, YAML), or the format's own file
syntax. Shapes: how a tool delivers the lines (as is, bash's ``[stderr] `` tag,
ANSI colour, a diff's sign, read_file's and ``cat -n``'s line numbers, search's
``path:line:``, and combinations). Every cell must lose the secret and keep the
lines' prefixes and the text around it; ordinary text in every shape must come
back untouched.
"""

from __future__ import annotations

import base64
import hashlib
import random
import re
import time
from collections.abc import Callable

import pytest

from turnstoned.guard.rules import View
from turnstoned.guard.scan import check


def _rand(seed: str, n: int, alphabet: str) -> str:
    out: list[str] = []
    counter = 0
    while len(out) < n:
        for byte in hashlib.sha256(f"{seed}:{counter}".encode()).digest():
            out.append(alphabet[byte % len(alphabet)])
        counter += 1
    return "".join(out[:n])


ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
URLSAFE = ALNUM + "_-"
HEX = "0123456789abcdef"
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


def _b64url(data: str) -> str:
    return base64.urlsafe_b64encode(data.encode()).decode().rstrip("=")


def _pem(label: str, seed: str, lines: int = 8, width: int = 64) -> tuple[str, list[str]]:
    blob = b"".join(hashlib.sha512(f"{seed}{i}".encode()).digest() for i in range(lines * 2))
    text = base64.b64encode(blob).decode()
    body = [text[i * width:(i + 1) * width] for i in range(lines)]
    return "\n".join([f"-----BEGIN {label}-----", *body, f"-----END {label}-----"]), body


# ------------------------------------------------------------------ the formats

GLPAT = "glpat-" + _rand("gitlab", 20, URLSAFE)
SLACK_HOOK = f"T{_rand('st', 10, HEX.upper())}/B{_rand('sb', 10, HEX.upper())}/" + _rand(
    "slack", 24, ALNUM)
DISCORD_HOOK = _rand("discord", 68, URLSAFE)
NPM = "npm_" + _rand("npm", 36, ALNUM)
NPM_LEGACY = "5f2a9c1e-8b7d-4e3f-a1b2-" + _rand("npmlegacy", 12, HEX)
NPM_AUTH = base64.b64encode(b"builder:" + _rand("npmauth", 16, ALNUM).encode()).decode()
PYPI = "pypi-AgEIcHlwaS5vcmc" + _rand("pypi", 120, URLSAFE)
HF = "hf_" + _rand("hf", 34, ALNUM[:52])
SENDGRID = "SG." + _rand("sg1", 22, URLSAFE) + "." + _rand("sg2", 43, URLSAFE)
TWILIO_SK = "SK" + _rand("twsk", 32, HEX)
TWILIO_AC = "AC" + _rand("twac", 32, HEX)
TWILIO_AUTH = _rand("twauth", 32, HEX)
SHOPIFY = "shpat_" + _rand("shopify", 32, HEX)
SHOPIFY_SS = "shpss_" + _rand("shopifyss", 32, HEX)
DIGITALOCEAN = "dop_v1_" + _rand("do", 64, HEX)
DIGITALOCEAN_OAUTH = "doo_v1_" + _rand("doo", 64, HEX)
AGE = "AGE-SECRET-KEY-1" + _rand("age", 58, BECH32)
YAML_PW = "Yq7!" + _rand("yaml", 10, ALNUM)
INI_PW = "iN1-" + _rand("ini", 12, ALNUM)
NETRC_PW = "nT9#" + _rand("netrc", 12, ALNUM)
PGPASS_PW = "Pg5%" + _rand("pgpass", 12, ALNUM)
DOCKER_AUTH = base64.b64encode(b"robot$ci:" + _rand("docker", 24, ALNUM).encode()).decode()
JWT = (_b64url('{"alg":"RS256","typ":"JWT"}') + "." + _b64url(
    '{"sub":"job_4242","iss":"gitlab.example.com","ref":"main"}') + "."
    + _rand("jwtsig", 86, URLSAFE))

SK_PROJ = "sk-proj-" + _rand("openai", 48, URLSAFE)
SK_ANT = "sk-ant-api03-" + _rand("anthropic", 93, URLSAFE) + "AA"
STRIPE = "sk_live_" + _rand("stripe", 40, ALNUM)
STRIPE_RK = "rk_live_" + _rand("stripe-rk", 40, ALNUM)
GHP = "ghp_" + _rand("ghp", 36, ALNUM)
GH_PAT = "github_pat_" + _rand("ghpat1", 22, ALNUM) + "_" + _rand("ghpat2", 59, ALNUM)
AKIA = "AKIA" + _rand("akia", 16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
AWS_SECRET = _rand("awssecret", 40, ALNUM + "/+")
AIZA = "AIza" + _rand("google", 35, URLSAFE)
XOXB = "xoxb-" + _rand("x1", 12, "0123456789") + "-" + _rand("x2", 13, "0123456789") + "-" + \
    _rand("xoxb", 24, ALNUM)
BEARER = _rand("bearer", 40, ALNUM)
DSN_PW = "dsN" + _rand("dsn", 12, ALNUM)
URL_TOKEN = _rand("urltok", 24, ALNUM)
ENV_PW = "eNv" + _rand("env", 14, ALNUM)
JSON_SECRET = "jS0" + _rand("json", 20, ALNUM)
API_KEY = _rand("apikey", 32, ALNUM)
ACCESS_TOKEN = "ya29." + _rand("ya29", 40, URLSAFE)
RSA_PEM, RSA_BODY = _pem("RSA PRIVATE KEY", "rsa")
OPENSSH_PEM, OPENSSH_BODY = _pem("OPENSSH PRIVATE KEY", "openssh", width=70)
PKCS8_PEM, PKCS8_BODY = _pem("PRIVATE KEY", "pkcs8")
EC_PEM, EC_BODY = _pem("EC PRIVATE KEY", "ec", lines=3)


def _token(value: str) -> list[tuple[str, str]]:
    """A value with nothing secret-looking about its name: the format alone must give it away."""
    return [(f"found {value} in the build log", value), (f"VALUE={value}", value),
            (f'{{"value": "{value}", "n": 1}}', value), (f"value: {value}", value),
            (f"result = '{value}'", value)]


def _pem_contents(block: str) -> list[tuple[str, str]]:
    indented = "\n".join("  " + line for line in block.splitlines())
    escaped = block.replace("\n", "\\n")
    return [(block, block), (f"deploy_key: |\n{indented}", block),
            (f'{{"private_key": "{escaped}\\n", "project_id": "demo"}}', block),
            (f'SSH_KEY="{block}"', block)]


# id -> [(content, the secret in it)]; the first 17 are the formats the guard used to miss.
FORMATS: dict[str, list[tuple[str, str]]] = {
    "gitlab": _token(GLPAT) + _token("glrt-" + _rand("glrt", 20, URLSAFE)),
    "slack-webhook": [(f"curl -X POST https://hooks.slack.com/services/{SLACK_HOOK} -d @msg",
                       SLACK_HOOK),
                      (f"SLACK_WEBHOOK_URL=https://hooks.slack.com/services/{SLACK_HOOK}",
                       SLACK_HOOK),
                      (f'{{"webhook": "https://hooks.slack.com/services/{SLACK_HOOK}"}}',
                       SLACK_HOOK),
                      (f"url: https://hooks.slack.com/services/{SLACK_HOOK}", SLACK_HOOK)],
    "discord-webhook": [(f"https://discord.com/api/webhooks/112233445566778899/{DISCORD_HOOK}",
                         DISCORD_HOOK),
                        ((f"HOOK=https://discordapp.com/api/webhooks/1122334455667788/"
                          f"{DISCORD_HOOK}"), DISCORD_HOOK),
                        ((f'{{"url": "https://canary.discord.com/api/v10/webhooks/'
                          f'11223344556677/{DISCORD_HOOK}"}}'), DISCORD_HOOK)],
    "npm-token": _token(NPM),
    "npmrc": [(f"//registry.npmjs.org/:_authToken={NPM_LEGACY}", NPM_LEGACY),
              (f"@acme:registry=https://npm.acme.dev/\n//npm.acme.dev/:_authToken=\"{NPM_LEGACY}\"",
               NPM_LEGACY),
              (f"_auth = {NPM_AUTH}\nalways-auth = true", NPM_AUTH),
              (f"//npm.acme.dev/:_password={NPM_AUTH}", NPM_AUTH)],
    "pypi": _token(PYPI) + [(f"[pypi]\n  username = __token__\n  password = {PYPI}", PYPI)],
    "huggingface": _token(HF),
    "sendgrid": _token(SENDGRID),
    "twilio": [*_token(TWILIO_SK),
               (f"TWILIO_ACCOUNT_SID={TWILIO_AC}", TWILIO_AC),
               (f'account_sid = "{TWILIO_AC}"', TWILIO_AC),
               (f"TWILIO_AUTH_TOKEN={TWILIO_AUTH}", TWILIO_AUTH),
               (f'TWILIO_AUTH_TOKEN = "{TWILIO_AUTH}"', TWILIO_AUTH),
               (f"twilio:\n  auth_token: {TWILIO_AUTH}", TWILIO_AUTH),
               (f'{{"authToken": "{TWILIO_AUTH}"}}', TWILIO_AUTH)],
    "shopify": _token(SHOPIFY) + _token(SHOPIFY_SS),
    "digitalocean": _token(DIGITALOCEAN) + _token(DIGITALOCEAN_OAUTH),
    "age": _token(AGE) + [((f"# created: 2024-05-01T10:00:00Z\n# public key: age1qyqszqgpqyqsz"
                            f"qgpqyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqs3290gq\n{AGE}"), AGE)],
    "yaml-ini-password": [(f"database:\n  host: db\n  password: {YAML_PW}\n  port: 5432", YAML_PW),
                          (f"db:\n  password: \"{YAML_PW}\"", YAML_PW),
                          (f"- name: app\n  db_password: '{YAML_PW}'  # rotated", YAML_PW),
                          (f"spring.datasource.password={INI_PW}", INI_PW),
                          (f"[client]\nuser = app\npassword = {INI_PW}", INI_PW),
                          (f'password = "{INI_PW}"', INI_PW),
                          (f"secret: {INI_PW}", INI_PW), (f"token: {INI_PW}", INI_PW),
                          (f"api_key: {INI_PW}", INI_PW),
                          (f"client_secret = {INI_PW}", INI_PW),
                          (f"  passphrase: {YAML_PW}", YAML_PW)],
    "netrc": [(f"machine api.example.com login bob password {NETRC_PW}", NETRC_PW),
              (f"machine git.example.com\n  login bob\n  password {NETRC_PW}", NETRC_PW),
              (f"default login anonymous password {NETRC_PW}", NETRC_PW)],
    "pgpass": [(f"db.example.com:5432:app:appuser:{PGPASS_PW}", PGPASS_PW),
               (f"localhost:5432:*:postgres:{PGPASS_PW}\n*:*:*:replicator:{PGPASS_PW}x",
                PGPASS_PW)],
    "docker-config": [('{\n\t"auths": {\n\t\t"ghcr.io": {\n\t\t\t"auth": "' + DOCKER_AUTH
                       + '"\n\t\t}\n\t}\n}', DOCKER_AUTH),
                      ('{"auths":{"https://index.docker.io/v1/":{"auth":"' + DOCKER_AUTH
                       + '"}}}', DOCKER_AUTH)],
    "jwt": [(f"CI_JOB_JWT={JWT}", JWT), (f"CI_JOB_JWT_V2={JWT}", JWT),
            (f"ID_TOKEN_JWT='{JWT}'", JWT), *_token(JWT)],
    # The formats the guard already handled.
    "openai": _token(SK_PROJ),
    "anthropic": _token(SK_ANT),
    "stripe": _token(STRIPE) + _token(STRIPE_RK),
    "github": _token(GHP) + _token(GH_PAT),
    "aws-access-key-id": _token(AKIA),
    "aws-secret-key": [((f"[default]\naws_access_key_id = {AKIA}\naws_secret_access_key = "
                         f"{AWS_SECRET}"), AWS_SECRET),
                       (f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}", AWS_SECRET)],
    "google-api-key": _token(AIZA),
    "slack-token": _token(XOXB),
    "bearer": [(f"Authorization: Bearer {BEARER}", BEARER),
               (f"curl -H 'Authorization: Bearer {BEARER}' https://api.example.com", BEARER)],
    "connection-string": [(f"postgres://app:{DSN_PW}@db:5432/app", DSN_PW),
                          (f"DSN=mysql://root:{DSN_PW}@127.0.0.1/x", DSN_PW),
                          (f'{{"url": "mongodb+srv://u:{DSN_PW}@cluster0.example.net/db"}}',
                           DSN_PW),
                          (f"url: redis://:{DSN_PW}@cache:6379/0", DSN_PW)],
    "url-userinfo": [(f"git clone https://x-access-token:{URL_TOKEN}@github.com/o/r.git",
                      URL_TOKEN)],
    "env-line": [(f"DB_PASSWORD={ENV_PW}", ENV_PW), (f"export STRIPE_SECRET={ENV_PW}", ENV_PW),
                 (f"  - POSTGRES_PASSWORD={ENV_PW}", ENV_PW),
                 (f"environment:\n  REDIS_PASSWORD: {ENV_PW}", ENV_PW)],
    "json-secret": [(f'{{"client_secret": "{JSON_SECRET}"}}', JSON_SECRET),
                    (f'  "password": "{JSON_SECRET}",', JSON_SECRET)],
    "key-assignment": [(f"api_key={API_KEY}", API_KEY), (f"--secret-key: {API_KEY}", API_KEY),
                       (f'client = Client(api_key="{API_KEY}")', API_KEY)],
    "token-assignment": [(f"access_token={ACCESS_TOKEN}", ACCESS_TOKEN),
                         (f"refresh_token = '{ACCESS_TOKEN}'", ACCESS_TOKEN)],
    "rsa-key": _pem_contents(RSA_PEM),
    "openssh-key": _pem_contents(OPENSSH_PEM),
    "pkcs8-key": _pem_contents(PKCS8_PEM),
    "ec-key": _pem_contents(EC_PEM),
}
NEW_FORMATS = list(FORMATS)[:17]


# ------------------------------------------------------------------- the shapes

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _lines(f: Callable[[int, str], str]) -> Callable[[str], str]:
    return lambda text: "\n".join(f(n, line) for n, line in enumerate(text.split("\n"), 1))


def _ansi_inside(text: str) -> str:
    # grep --color: the key names and separators coloured, each line reset at its end.
    coloured = re.sub(r"(?m)^([ \t]*)([A-Za-z_][\w.-]*)", "\\1\x1b[1;34m\\2\x1b[0m", text)
    return _lines(lambda n, line: line + "\x1b[m")(coloured)


SHAPES: dict[str, Callable[[str], str]] = {
    "plain": lambda text: text,
    "stderr": _lines(lambda n, line: f"[stderr] {line}"),
    "ansi": _lines(lambda n, line: f"\x1b[31m{line}\x1b[0m"),
    "ansi-inside": _ansi_inside,
    "stderr-ansi": _lines(lambda n, line: f"[stderr] \x1b[33m{line}\x1b[0m"),
    "diff-added": _lines(lambda n, line: f"+{line}"),
    "diff-removed": _lines(lambda n, line: f"-{line}"),
    "diff-context": _lines(lambda n, line: f" {line}"),
    "git-diff-color": _lines(lambda n, line: f"\x1b[32m+{line}\x1b[m"),
    "read_file": _lines(lambda n, line: f"{n + 40:>4}\t{line}"),
    "cat-n": _lines(lambda n, line: f"{n:>6}\t{line}"),
    "read_file-diff": _lines(lambda n, line: f"{n + 7:>4}\t-{line}"),
    "search": _lines(lambda n, line: f"conf/app.cfg:{n + 3}:{line}"),
}
# What each shape leaves at the start of every line it delivers.
PREFIXES: dict[str, str] = {
    "stderr": r"\[stderr\] ", "stderr-ansi": r"\[stderr\] \x1b\[33m", "diff-added": r"\+",
    "diff-removed": "-", "diff-context": " ", "git-diff-color": r"\x1b\[32m\+",
    "read_file": r" *\d+\t", "cat-n": r" *\d+\t", "read_file-diff": r" *\d+\t-",
    "search": r"conf/app\.cfg:\d+:", "ansi": r"\x1b\[31m"}

BEFORE, AFTER = "$ ./deploy.sh --verbose", "deploy finished in 3s"


def _distinct(secret: str) -> list[str]:
    """What must not survive: the value itself, or for a key block each body line."""
    if "PRIVATE KEY-----" in secret:
        return [line[8:40] for line in secret.splitlines()[1:-1]]
    return [secret, secret[len(secret) // 2:]] if len(secret) >= 16 else [secret]


CELLS = [pytest.param(fmt, i, shape, id=f"{fmt}-{i}-{shape}")
         for fmt, contents in FORMATS.items() for i in range(len(contents)) for shape in SHAPES]


def test_the_matrix_counts_36_formats() -> None:
    assert len(FORMATS) == 36 and len(NEW_FORMATS) == 17


@pytest.mark.parametrize("fmt,index,shape", CELLS)
def test_every_format_is_redacted_in_every_shape(fmt: str, index: int, shape: str) -> None:
    content, secret = FORMATS[fmt][index]
    text = SHAPES[shape](f"{BEFORE}\n{content}\n{AFTER}")
    result = check(text)
    seen = ANSI.sub("", result.text)
    assert [d for d in _distinct(secret) if d in seen] == [], result.text
    assert result.redacted and "credential_leak" in result.flags
    lines = result.text.split("\n")
    # The text around the secret comes back as it was, prefixes included.
    wrapped = text.split("\n")
    assert lines[0] == wrapped[0] and lines[-1] == wrapped[-1], result.text
    if shape in PREFIXES:
        assert all(re.match(PREFIXES[shape], line) for line in lines), result.text
    assert "[REDACTED:" in seen


# ------------------------------------------------------------ ordinary text

PNG = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAYAAAAf8/9hAAAAAXNSR0IArs4c6QAA"
       "AERJREFUOE9jZKAQMFKon2HUAIZRwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMD"
       "AwMDAwMAAQwAB9Y4SngAAAABJRU5ErkJggg==")
ORDINARY = {
    "yaml-placeholders": ("db:\n  password: ${DB_PASSWORD}\n  secret: changeme\n"
                          "  token: \"{{ vault_token }}\"\n  api_key: <your-api-key>\n"
                          "  password_file: /run/secrets/db\n  passphrase: ''\n"
                          "  token: !vault |\n  password: *default_password\n"
                          "  secret: null\n  max_tokens: 4096"),
    "python-annotations": ("class Settings(BaseModel):\n    password: str\n"
                           "    api_key: str = ''\n    token: Optional[str] = None\n"
                           "    secret: SecretStr\n    self.password = password\n"
                           "    api_key = os.environ[\"API_KEY\"]\n"
                           "    token = request.headers.get(\"X-Token\")"),
    "keyword-arguments": ("    chars_per_token: float\n"
                          "    plan = Plan(chars_per_token=session.chars_per_token)\n"
                          "                chars_per_token=4.0)\n    max_tokens=4096,\n"
                          "    secret_key=settings.SECRET_KEY,"),
    "docstring": ('    """Connect.\n\n    Args:\n        password: The user\'s password.\n'
                  "        token: API token, see docs.\n        secret (str): Shared secret.\n"
                  '        api_key : str\n            The key.\n    """'),
    "typescript": ("interface Login {\n  password: string;\n  token?: string;\n}\n"
                   "const body = { password: form.password, token: this.token };"),
    "hf-npm-identifiers": ("from huggingface_hub import hf_hub_download\n"
                           "path = hf_hub_download(repo_id=\"gpt2\", filename=\"config.json\")\n"
                           "npm_config_cache=/home/dev/.npm\nnpm_package_version=1.4.2\n"
                           "pip install pypi-simple"),
    "hashes-and-ids": ("commit 9fceb02d0ae598e95dc970b74767f19372d61af8\n"
                       "request 550e8400-e29b-41d4-a716-446655440000 done\n"
                       "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
                       "Twilio docs: ACxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n"
                       "ACCEPT 0a1b2c3d4e5f60718293a4b5c6d7e8f9"),
    "base64-png": f'<img src="{PNG}">',
    "documented-placeholders": ("export GITLAB_TOKEN=glpat-xxxxxxxxxxxxxxxxxxxx\n"
                                "https://hooks.slack.com/services/T00000000/B00000000/"
                                "XXXXXXXXXXXXXXXXXXXXXXXX\n"
                                "https://hooks.slack.com/services/T00000000/B00000000/\n"
                                "//registry.npmjs.org/:_authToken=${NPM_TOKEN}\n"
                                "AGE-SECRET-KEY-1" + "X" * 58),
    "prose": ("Login failed: the password you entered is incorrect.\n"
              "Enter your password: \nThe machine learning model has a token limit.\n"
              "Set `password:` in config.yaml, see the docs.\n"
              "Use SG.setup() to configure."),
    "colon-lines": ("root:x:0:0:root:/root:/bin/bash\n12:30:45 backup done\n"
                    "00:1a:2b:3c:4d:5e\ntcp 0.0.0.0:8080:80 LISTEN"),
    "docker-json": '{"auths": {"ghcr.io": {}}, "credsStore": "desktop", "auth": "oauth2"}',
    "netrc-placeholder": "machine api.example.com login bob password changeme",
    "env-descriptors": ("JWT_ALGORITHM=HS256\nJWT_EXPIRY=3600\nWEBHOOK_ENABLED=true\n"
                        "TOKEN_TTL=3600\nSECRET_KEY_PATH=/etc/app/key"),
}


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("name", ORDINARY)
def test_ordinary_text_is_left_alone_in_every_shape(name: str, shape: str) -> None:
    text = SHAPES[shape](ORDINARY[name])
    result = check(text)
    assert result.text == text
    assert not result.redacted
    assert "credential_leak" not in result.flags


def test_ansi_inside_a_secret_is_seen_through() -> None:
    half = len(GLPAT) // 2
    text = f"token {GLPAT[:half]}\x1b[1m{GLPAT[half:]}\x1b[0m end"
    result = check(text)
    assert GLPAT[half:] not in result.text and GLPAT[:half] not in result.text
    assert result.text.startswith("token ") and result.text.endswith("\x1b[0m end")


def test_redaction_keeps_colour_and_prefixes_around_the_value() -> None:
    text = f"[stderr] \x1b[31mDB_PASSWORD=\x1b[1m{ENV_PW}\x1b[0m\n[stderr] next"
    assert check(text).text == ("[stderr] \x1b[31mDB_PASSWORD=\x1b[1m[REDACTED:secret]\x1b[0m\n"
                                "[stderr] next")
    diff = f"  12\t-password: {YAML_PW}\n  12\t+password: ${{DB_PASSWORD}}"
    assert check(diff).text == ("  12\t-password: [REDACTED:secret]\n"
                                "  12\t+password: ${DB_PASSWORD}")


def test_a_key_block_on_stderr_keeps_one_tagged_line() -> None:
    text = "\n".join(f"[stderr] {line}" for line in ["warning:", *OPENSSH_PEM.split("\n"), "x"])
    assert check(text).text == "[stderr] warning:\n[stderr] [REDACTED:private_key]\n[stderr] x"


def test_redacted_values_keep_their_quotes_and_comments() -> None:
    text = f"db:\n  password: \"{YAML_PW}\"  # rotated\n  token: '{INI_PW}'\npassword = {INI_PW}"
    assert check(text).text == ('db:\n  password: "[REDACTED:secret]"  # rotated\n'
                                "  token: '[REDACTED:secret]'\npassword = [REDACTED:secret]")


def test_webhooks_keep_their_host_and_ids() -> None:
    result = check(f"https://discord.com/api/webhooks/112233445566778899/{DISCORD_HOOK}\n"
                   f"https://hooks.slack.com/services/{SLACK_HOOK}")
    assert result.text == (
        "https://discord.com/api/webhooks/112233445566778899/[REDACTED:api_key]\n"
        "https://hooks.slack.com/services/[REDACTED:api_key]")


def _spans(rnd: random.Random, n: int, most: int) -> list[tuple[int, int]]:
    cuts = sorted(rnd.sample(range(n + 1), min(n + 1, 2 * rnd.randint(0, most))))
    return [(a, b) for a, b in zip(cuts[::2], cuts[1::2], strict=False) if a < b]


def test_the_view_puts_set_aside_text_back_around_edits() -> None:
    """Hide runs in stages, edit the view: the result is the original with only the edits,
    runs at an edit's edges kept, runs inside it gone."""
    rnd = random.Random(7)
    for _ in range(3000):
        original = "".join(rnd.choice("ab\n") for _ in range(rnd.randint(0, 24)))
        view = View(original)
        for _ in range(rnd.randint(1, 3)):
            view = view.hide(_spans(rnd, len(view.text), 4))
            assert view.render() == original
        found = [(a, b, "<T>") for a, b in _spans(rnd, len(view.text), 3)]
        runs: dict[int, list[str]] = {}
        for at, chars in zip(view.at, view.aside, strict=True):
            runs.setdefault(at, []).append(chars)
        expected: list[str] = []
        for k in range(len(view.text) + 1):
            if not any(a < k < b for a, b, _ in found):
                expected += runs.get(k, [])
            expected += [tag for a, _, tag in found if a == k]
            if k < len(view.text) and not any(a <= k < b for a, b, _ in found):
                expected.append(view.text[k])
        assert view.replace(found).render() == "".join(expected)


# ------------------------------------------------------------------ speed

HOSTILE = {
    "glpat": "glpat-" * 1_000_000,
    "password": "password: " * 500_000,
    "password-lines": "password: x\r" * 450_000,
    "quoted": 'password: "' * 460_000,
    "jwt": "eyJ" * 1_700_000,
    "jwt-dots": "eyJa." * 1_000_000,
    "netrc": "machine x password " * 300_000,
    "login": "login x\n" * 650_000,
    "pgpass": ":1:a" * 1_300_000,
    "slack": "hooks.slack.com/services/" * 200_000,
    "discord": "discord.com/api/webhooks/1/" * 190_000,
    "docker": '"auth": "' * 560_000,
    "npmrc": ":_authToken=" * 420_000,
    "stderr": "[stderr] " * 560_000,
    "stderr-lines": "[stderr] a\n" * 460_000,
    "ansi": "\x1b[31m" * 1_000_000,
    "diff": "+-" * 2_500_000,
    "diff-lines": "+A=b\n" * 1_000_000,
    "numbered": "1\t" * 2_500_000,
    "sg": "SG." * 1_700_000,
    "age": "AGE-SECRET-KEY-1" * 320_000,
}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", HOSTILE)
def test_a_5mb_hostile_text_stays_within_the_budget(name: str) -> None:
    text = HOSTILE[name]
    assert len(text) >= 5_000_000
    start = time.monotonic()
    check(text, budget_seconds=0.5)
    # The first MiB is always scanned in full (well under a second), the rest within the budget;
    # the margin is for a loaded machine (a quadratic pattern would take minutes).
    assert time.monotonic() - start < 3.0
