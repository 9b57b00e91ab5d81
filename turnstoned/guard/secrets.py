"""The output guard's credential rules: what is redacted (vendor tokens and keys, webhook URLs,
passwords in URLs, env lines, YAML/ini/netrc/pgpass/.npmrc lines and Docker configs, JSON
values under secret-named keys, JWTs, whole PEM/OpenSSH private key blocks), in whatever shape
a tool delivers the lines.

Shapes: the rules read a view of the text with its wrappers set aside (``_unwrap``): ANSI
escapes anywhere, and at a line's start bash's ``[stderr] `` tag and read_file's or ``cat -n``'s
line number. Two wrappers stay in the view because they cannot be told from a line's own text
by their shape: search's ``path:12:`` (a pgpass line's ``host:5432:`` looks the same) and a
diff's ``+``/``-`` (a PEM marker's first dash, a YAML list's dash); the line-anchored rules
allow them (``_LINE_PREFIX``, ``_HEAD``, ``[+-]?``), and a sign at a line's start is no left
neighbour for the token rules (``rules.diff_sign``). Edits are mapped back through the view,
so the tags, numbers, colours and signs around a redacted value come back as they were.
"""

from __future__ import annotations

import base64
import binascii
import re

from turnstoned.guard.rules import Edit, Rule, Scan, View, diff_sign, edits, rules, triggered

_I = re.IGNORECASE

_PLACEHOLDER = re.compile(
    r"[{}$<>]|%\(|REDACTED|^(?:your|example|changeme|placeholder|dummy|xxx)|^(.)\1*$"
    r"|^(?:password|passwd|pass|secret|pw)$|[-_.]x{6,}$", _I)
_BOOLEANS = frozenset({"true", "false", "yes", "no", "on", "off", "none", "null", "nil",
                       "enabled", "disabled", "required", "optional"})
_ENV_SECRET_SEGMENTS = frozenset({
    "SECRET", "SECRETS", "TOKEN", "TOKENS", "PASSWORD", "PASSWORDS", "PASSWD", "PASS",
    "CREDENTIAL", "CREDENTIALS", "DSN", "KEY", "KEYS", "APIKEY", "PRIVATEKEY"})
# Secret only as the key's last part (CI_JOB_JWT, NPM_CONFIG__AUTH), not JWT_ISSUER or AUTH_MODE.
_ENV_SECRET_LAST = frozenset({"JWT", "AUTH", "AUTHTOKEN", "WEBHOOK"})
_ENV_VERSION = re.compile(r"V\d{1,3}")
# A key ending in one of these names something about a secret, not the secret itself.
_ENV_DESCRIPTORS = frozenset({
    "PATH", "FILE", "DIR", "NAME", "ID", "TYPE", "SIZE", "LEN", "LENGTH", "BITS", "COUNT",
    "LIMIT", "MAX", "MIN", "ENABLED", "DISABLED", "ENABLE", "TIMEOUT", "TTL", "EXPIRY",
    "EXPIRES", "PREFIX", "HEADER", "FIELD", "ALGORITHM", "FORMAT", "MODE", "VERSION", "ENV",
    "VAR", "HOST", "PORT", "USER", "USERNAME", "REGION", "ENDPOINT", "URL"})
_ENV_URL_KEYS = frozenset({"DATABASE_URL", "DB_URL", "TURNSTONE_DB_URL"})
_USERINFO = re.compile(r"://[^\s:/@]{0,128}:[^\s@/]{1,256}@")
_SECRET_NAMES = frozenset({
    "password", "passwd", "pwd", "pass", "passphrase", "secret", "client_secret", "secret_key",
    "api_key", "apikey", "access_key", "private_key", "token", "access_token", "refresh_token",
    "id_token", "auth_token", "session_token", "authorization", "proxy_authorization",
    "credential", "credentials", "bearer", "x_api_key", "jwt", "identitytoken",
    "registrytoken"})
_SECRET_SUFFIXES = ("_password", "_passwd", "_pass", "_passphrase", "_secret", "_token",
                    "_api_key", "_apikey", "_secret_key", "_private_key", "_access_key", "_jwt")
_NOT_SECRET = frozenset({"page_token", "next_page_token", "next_token", "continuation_token",
                         "sync_token", "pagination_token", "cursor_token", "max_token"})
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SCHEME = re.compile(r"(?:postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?|rediss?|amqps?|sqlite|"
                     r"mssql|oracle|https?)(?:\+[a-z0-9]+)?", _I)
_KEY_OWNER = re.compile(r"(?:.*[_-])?(?:api|secret|access|private|client|auth|app|master|"
                        r"account|subscription)")
_TOKEN_OWNERS = frozenset({"", "access", "refresh", "auth", "session", "id", "api", "bearer",
                           "csrf", "oauth", "github", "gh", "npm", "pypi"})
# An unquoted config value that is code or YAML structure, not a literal.
_TYPE_WORDS = frozenset({"str", "string", "bytes", "int", "float", "bool", "boolean", "any",
                         "object", "number", "dict", "list", "tuple", "optional", "secretstr",
                         "secretbytes", "undefined"})
_DOTTED_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")

# What precedes a line's own text in search's and `grep -n`'s output ("path:12:", "path-12-"
# for context lines); read_file's "  12<TAB>" is set aside by the view, and allowed here too.
_LINE_PREFIX = r"(?P<p>[ \t]*\d{1,9}\t|[^\r\n:]{1,1024}:\d{1,9}[:-])"
# What may stand between a line's start and a config key: that prefix, a diff sign the view
# kept, indentation, a YAML list dash, a quote around the key.
_HEAD = re.compile(r"(?:[ \t]*\d{1,9}\t|[^\r\n:]{1,1024}:\d{1,9}[:-])?[+-]?[ \t]*(?:-[ \t]+)?"
                   r"[\"']?")
_HEAD_REACH = 1100


def _word_before(m: re.Match[str], extra: str = "_-", limit: int = 64) -> str:
    """The run of word characters (plus ``extra``) right before the match, lower-cased."""
    return _run_before(m.string, m.start(), extra, limit).lower()


def _run_before(s: str, end: int, extra: str, limit: int) -> str:
    i = end
    while i > 0 and end - i < limit and (s[i - 1].isalnum() or s[i - 1] in extra):
        i -= 1
    return s[i:end]


def _at_line_start(s: str, pos: int) -> bool:
    """True when only a line prefix, a diff sign, indentation or a list dash precede ``pos``."""
    lo = max(0, pos - _HEAD_REACH)
    nl = s.rfind("\n", lo, pos)
    if nl < 0 and lo:
        return False
    return _HEAD.fullmatch(s, nl + 1, pos) is not None


def _unquote(value: str) -> str:
    v = value.strip()
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
        return v[1:-1]
    return v


def _secret_name(key: str) -> bool:
    """A JSON/YAML/ini key that names a secret (``dbPassword``, ``api-key``, ``auth_token``)."""
    key = _CAMEL.sub("_", key).lower().replace("-", "_")
    if key in _NOT_SECRET:
        return False
    return key in _SECRET_NAMES or key.endswith(_SECRET_SUFFIXES)


def not_placeholder(m: re.Match[str]) -> bool:
    return not _PLACEHOLDER.search(m.group("v"))


def _random_token(m: re.Match[str]) -> bool:
    """True for a value that looks generated (letters and digits), not a name or a call."""
    v = m.group("v")
    if not any(c.isdigit() for c in v) or not any(c.isalpha() for c in v):
        return False
    return not v.startswith("/") and m.string[m.end():m.end() + 1] != "("


def _generated(m: re.Match[str]) -> bool:
    """A vendor token's random part (group ``b``): two kinds of character, not a placeholder."""
    body = m.group("b")
    if len(body) > 1024 or _PLACEHOLDER.search(body):
        return False
    kinds = (any(c.isupper() for c in body), any(c.islower() for c in body),
             any(c.isdigit() for c in body))
    return sum(kinds) >= 2


def _twilio_sid(m: re.Match[str]) -> bool:
    """An account SID (AC…) is only redacted where the line says what it is."""
    s, at = m.string, m.start()
    lo = max(0, at - 100)
    line = s[max(lo, s.rfind("\n", lo, at) + 1):at].lower()
    return any(w in line for w in ("twilio", "sid", "account")) and _generated(m)


def _webhook(m: re.Match[str]) -> bool:
    """The secret part of a webhook URL is its last segment: generated, 16 characters or more
    (Slack's documented T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX is not)."""
    v = m.group("v")
    last = v.rsplit("/", 1)[-1]
    if len(v) > 1024 or len(last) < 16 or _PLACEHOLDER.search(last):
        return False
    return sum((any(c.isupper() for c in last), any(c.islower() for c in last),
                any(c.isdigit() for c in last))) >= 2


def _connection_string(m: re.Match[str]) -> bool:
    scheme = _word_before(m, "+.-")
    if scheme and diff_sign(m.string, m.start() - len(scheme)):
        scheme = scheme[1:]
    return bool(_SCHEME.fullmatch(scheme)) and not_placeholder(m)


def _key_assignment(m: re.Match[str]) -> bool:
    """``…api_key=…``: any identifier whose last part names a key holder."""
    owner = _word_before(m).rstrip("_-")
    return bool(_KEY_OWNER.fullmatch(owner)) and _random_token(m)


def _token_assignment(m: re.Match[str]) -> bool:
    """``token=``/``access_token=``: whole identifiers only (page_token is not a secret)."""
    return _word_before(m).rstrip("_-") in _TOKEN_OWNERS and _random_token(m)


def _env_secret(m: re.Match[str]) -> bool:
    key, value = m.group("k"), _unquote(m.group("v"))
    if (len(value) < 4 or value.isdigit() or value.lower() in _BOOLEANS
            or _PLACEHOLDER.search(value) or any(c in value for c in "([")):
        return False
    if key in _ENV_URL_KEYS or key.endswith("_DATABASE_URL"):
        return bool(_USERINFO.search(value))
    segments = key.split("_")
    if len(segments) > 1 and _ENV_VERSION.fullmatch(segments[-1]):
        segments.pop()  # CI_JOB_JWT_V2
    if segments[-1] in _ENV_SECRET_LAST:
        return True
    if segments[-1] in ("URL", "URI") and ("WEBHOOK" in segments or "WEBHOOKS" in segments):
        return True
    return segments[-1] not in _ENV_DESCRIPTORS and not _ENV_SECRET_SEGMENTS.isdisjoint(segments)


def _json_secret(m: re.Match[str]) -> bool:
    if not _secret_name(m.group("k")):
        return False
    value = m.group("v")
    if _PLACEHOLDER.search(value):
        return False
    if m.group("k").lower().replace("-", "_").endswith("authorization"):
        return len(value.split()[-1]) >= 8
    return not any(c.isspace() for c in value)


def _config_secret(m: re.Match[str]) -> bool:
    """``password: value`` / ``db.password = value``: a secret-named key leading its line, and
    a value that is a literal, not code (``password: str``, ``token = get()``) or YAML
    structure (``!vault |``, ``*alias``) or a reference to the secret (``${X}``, a path)."""
    s = m.string
    head = _run_before(s, m.start(), "_-.", 128)
    if not _at_line_start(s, m.start() - len(head)):
        return False
    name = (head + m.group("k")).rsplit(".", 1)[-1]
    if not _secret_name(name):
        return False
    raw = m.group("v")
    quoted = raw[0] in "\"'"
    value = raw[1:-1] if quoted else raw
    if not 4 <= len(value) <= 4096 or value.lower() in _BOOLEANS or _PLACEHOLDER.search(value):
        return False
    if (value.isdigit() and len(value) < 6) or value.startswith(("/", "~/", "./")):
        return False
    if value.lower() == name.lower():
        return False
    if quoted:
        return True
    return not (any(c in value for c in "()[]{}`") or value[0] in "!*&|>"
                or value.endswith((",", ";")) or value.split()[0].lower() in _TYPE_WORDS
                or (_DOTTED_NAME.fullmatch(value) and not any(c.isdigit() for c in value)))


def _line_secret(m: re.Match[str]) -> bool:
    """A netrc or .npmrc entry: it leads its line, and its value is not a placeholder."""
    return _at_line_start(m.string, m.start()) and len(_unquote(m.group("v"))) >= 4 \
        and not _PLACEHOLDER.search(_unquote(m.group("v")))


def _npmrc(m: re.Match[str]) -> bool:
    """``//registry/:_authToken=…``, ``npm_config__auth=…`` or a top-level ``_auth = …``."""
    at = m.start()
    return (at > 0 and m.string[at - 1] in ":_" or _at_line_start(m.string, at)) and \
        len(_unquote(m.group("v"))) >= 8 and not _PLACEHOLDER.search(_unquote(m.group("v")))


_PG_HOST = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_*%[]")


def _pgpass(m: re.Match[str]) -> bool:
    """``host:port:db:user:password``: the host field leads its line and names a host."""
    s, at = m.string, m.start()
    i = at
    while i > 0 and at - i < 253 and s[i - 1] in _PG_HOST:
        i -= 1
    host = s[i:at]
    return bool(host) and not host.isdigit() and _at_line_start(s, i) and not_placeholder(m)


def _basic_auth_blob(m: re.Match[str]) -> bool:
    """A Docker config ``auth``: base64 of ``user:password``."""
    try:
        return b":" in base64.b64decode(m.group("v"), validate=True)
    except (binascii.Error, ValueError):
        return False


_CL = "credential_leak"
_API, _SECRET_TAG = "[REDACTED:api_key]", "[REDACTED:secret]"
_ASSIGN = r"[\"']?[ \t]*[=:][ \t]*[\"']?"
# A config value: quoted (then only a separator or a comment may follow on the line), or one
# bare word with only a comment after it: words after words are prose (a docstring's
# "password: The user's password."). Possessive, so a failing line cannot make the engine retry.
_QUOTED_END = r"(?=[ \t]*(?:[,;][ \t]*)?(?:[\r\n]|\Z|#|//))"
_CONFIG_VALUE = (r"(?P<v>\"[^\"\r\n]{1,4096}+\"" + _QUOTED_END + r"|'[^'\r\n]{1,4096}+'"
                 + _QUOTED_END + r"|[^\s#\"']\S*+(?=[ \t]*(?:[\r\n]|\Z|#)))")
_CONFIG_SEP = r"[\"']?(?:[ \t]*:?=[ \t]*|:[ \t]+)"
_NETRC_PASSWORD = r"[ \t]+password[ \t]+(?P<v>\S{1,1024}+)"
_NETRC_NEXT_LINE = (r"[ \t]+\S{1,256}+[ \t]*\r?\n" + _LINE_PREFIX + r"?[+-]?[ \t]*password[ \t]+"
                    r"(?P<v>\S{1,1024}+)")
_PG_FIELD = r"(?:[^\s:\\]|\\.)"
# Order matters: whole-structure shapes first, so a key inside an .env line or a
# JSON value is reported once, under the structure that holds it; then the vendor
# formats, before the rules that only know a value by the name it is given.
_SECRETS: tuple[Rule, ...] = (
    *rules(_CL, "connection_string_leak", "high", "connection string with an inline password",
           (("://",), r"://[^\s:/@]{0,128}:(?P<v>[^\s@/]{1,256})@"),
           accept=_connection_string, tag="[REDACTED:password]"),
    *rules(_CL, "env_file_leak", "high", "env-style line with a secret-named key",
           # Also as a diff line (+/-) or a YAML list item, each behind a line number.
           (("=",), (r"^" + _LINE_PREFIX + r"?[+-]?[ \t]*(?:export[ \t]+|-[ \t]+)?"
                     r"(?P<k>[A-Z][A-Z0-9_]{0,63})=(?P<v>[^\s#][^\r\n]*?)(?=[ \t]+#|[ \t]*\r?$)")),
           # A quoted KEY=value item, as in `docker inspect` or a compose file's list.
           (("=",), (r"^" + _LINE_PREFIX + r"?[+-]?[ \t]*(?:-[ \t]+)?[\"']"
                     r"(?P<k>[A-Z][A-Z0-9_]{0,63})=(?P<v>[^\"'\r\n]+)[\"']")),
           # A compose `environment:` map entry: one word (or one quoted string) as value.
           ((":",), (r"^" + _LINE_PREFIX + r"?[+-]?[ \t]*(?P<k>[A-Z][A-Z0-9_]{0,63}):[ \t]+"
                     r"(?P<v>\"[^\"\r\n]+\"|'[^'\r\n]+'|[^\s#\"'][^\s]*)(?=[ \t]+#|[ \t]*\r?$)")),
           accept=_env_secret, flags=re.MULTILINE, tag=_SECRET_TAG),
    *rules(_CL, "json_secret_leak", "high", "Docker config auth (base64 user:password)",
           (('"auth"',), r"\"auth\"[ \t]*:[ \t]*\"(?P<v>[A-Za-z0-9+/]{8,8192}+={0,2})\""),
           accept=_basic_auth_blob, tag=_SECRET_TAG),
    *rules(_CL, "json_secret_leak", "high", "JSON/dict value under a secret-named key",
           ((":",), (r"(?P<q>[\"'])(?P<k>[A-Za-z0-9_-]{1,64})(?P=q)\s*:\s*(?P<q2>[\"'])"
                    r"(?P<v>[^\"'\\\r\n]{8,512})(?P=q2)")),
           accept=_json_secret, tag=_SECRET_TAG),
    *rules(_CL, "config_secret_leak", "high", ".npmrc auth entry",
           (("_auth", "_password"), (r"_(?:auth(?:Token)?|password)[ \t]*=[ \t]*"
                                     r"(?P<v>\"[^\"\r\n]{1,4096}+\"|'[^'\r\n]{1,4096}+'"
                                     r"|[^\s\"'#;][^\s#;]*+)")),
           accept=_npmrc, tag=_SECRET_TAG, unquote=True),
    *rules(_CL, "config_secret_leak", "high", "netrc password",
           (("machine",), (r"machine[ \t]+\S{1,256}+(?:[ \t]+(?:login|account|port)[ \t]+"
                           r"\S{1,256}+){0,3}+" + _NETRC_PASSWORD)),
           (("default",), (r"default(?:[ \t]+(?:login|account)[ \t]+\S{1,256}+){0,3}+"
                           + _NETRC_PASSWORD)),
           (("login",), r"login" + _NETRC_NEXT_LINE),
           (("machine",), r"machine" + _NETRC_NEXT_LINE),
           accept=_line_secret, tag=_SECRET_TAG),
    *rules(_CL, "config_secret_leak", "high", "pgpass line (host:port:db:user:password)",
           ((":",), (r":(?:\d{1,5}|\*):" + _PG_FIELD + r"{1,256}+:" + _PG_FIELD + r"{1,256}+:"
                     r"(?P<v>" + _PG_FIELD + r"{1,1024}+)(?=[ \t]*(?:[\r\n]|\Z))")),
           accept=_pgpass, tag=_SECRET_TAG),
    *rules(_CL, "api_key_leak", "high", "OpenAI/Anthropic-style secret key (sk-...)",
           (("sk-",), r"(?P<v>sk-(?:proj-|ant-|svcacct-|admin-)?[A-Za-z0-9_-]{20,})"),
           left=r"[\w-]", accept=_random_token, tag=_API),
    *rules(_CL, "api_key_leak", "high", "Stripe secret key",
           (("k_live_", "k_test_"), r"(?P<v>[sr]k_(?:live|test)_[A-Za-z0-9]{20,})"),
           left=r"[\w-]", tag=_API),
    *rules(_CL, "api_key_leak", "high", "GitHub token",
           (("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), r"(?P<v>gh[pousr]_[A-Za-z0-9]{36,255})"),
           (("github_pat_",), r"(?P<v>github_pat_[A-Za-z0-9_]{22,255})"), left=r"\w", tag=_API),
    *rules(_CL, "api_key_leak", "high", "GitLab token",
           (("gl",),
            (r"(?P<v>gl(?:pat|dt|rt|ptt|ft|soat|cbt|imt|agent|oas)-(?P<b>[0-9A-Za-z_-]{20,}+)"
             r"(?:\.[0-9A-Za-z_-]++){0,3}+)")),
           left=r"[\w-]", accept=_generated, tag=_API),
    *rules(_CL, "api_key_leak", "high", "AWS access key id",
           (("akia", "asia"), r"(?P<v>(?:AKIA|ASIA)[0-9A-Z]{16})(?![0-9A-Z])"),
           left=r"[A-Z0-9]", tag=_API),
    *rules(_CL, "api_key_leak", "high", "Google API key",
           (("aiza",), r"(?P<v>AIza[0-9A-Za-z_-]{35})(?![\w-])"), left=r"[\w-]", tag=_API),
    *rules(_CL, "api_key_leak", "high", "Slack token",
           (("xox",), r"(?P<v>xox[abprs]-[A-Za-z0-9-]{10,})"), left=r"[\w-]", tag=_API),
    *rules(_CL, "webhook_leak", "high", "Slack or Discord webhook URL",
           (("hooks.slack.com/",),
            (r"hooks\.slack\.com/(?:services|workflows|triggers)/"
             r"(?P<v>[A-Za-z0-9_-]{1,64}+(?:/[A-Za-z0-9_-]{1,128}+){1,4}+)")),
           (("discord",), (r"discord(?:app)?\.com/api/(?:v\d{1,2}/)?webhooks/\d{5,30}+/"
                           r"(?P<v>[A-Za-z0-9_-]{20,}+)")),
           left=r"[\w-]", accept=_webhook, tag=_API),
    *rules(_CL, "api_key_leak", "high", "package registry token (npm, PyPI, Hugging Face)",
           (("npm_",), r"(?P<v>npm_(?P<b>[A-Za-z0-9]{36,}+))(?![_-])"),
           (("pypi-ag",), r"(?P<v>pypi-Ag(?P<b>[A-Za-z0-9_-]{50,}+))"),
           (("hf_",), r"(?P<v>hf_(?P<b>[A-Za-z0-9]{30,}+))(?![_-])"),
           left=r"[\w-]", accept=_generated, tag=_API),
    *rules(_CL, "api_key_leak", "high", "SendGrid API key",
           (("sg.",), r"(?P<v>SG\.(?P<b>[A-Za-z0-9_-]{16,32}+\.[A-Za-z0-9_-]{30,64}+))(?![\w-])"),
           left=r"[\w.-]", accept=_generated, tag=_API),
    *rules(_CL, "api_key_leak", "high", "Twilio API key",
           (("sk",), r"(?P<v>SK(?P<b>[0-9a-f]{32}))(?![0-9A-Za-z])"),
           left=r"\w", accept=_generated, tag=_API),
    *rules(_CL, "api_key_leak", "high", "Twilio account SID",
           (("ac",), r"(?P<v>AC(?P<b>[0-9a-f]{32}))(?![0-9A-Za-z])"),
           left=r"\w", accept=_twilio_sid, tag=_API),
    *rules(_CL, "api_key_leak", "high", "Shopify or DigitalOcean token",
           (("shp",),
            r"(?P<v>shp(?:at|ss|ca|pa)_(?P<b>[a-fA-F0-9]{32,}+))(?![\w-])"),
           (("_v1_",), r"(?P<v>do[opr]_v1_(?P<b>[a-f0-9]{64}+))(?![\w-])"),
           left=r"[\w-]", accept=_generated, tag=_API),
    *rules(_CL, "private_key_leak", "high", "age secret key",
           (("age-secret-key-1",), r"(?P<v>AGE-SECRET-KEY-1(?P<b>[0-9A-Z]{50,}+))"),
           left=r"[\w-]", accept=_generated, tag="[REDACTED:private_key]"),
    *rules(_CL, "bearer_token_leak", "high", "Bearer token",
           (("bearer",), r"[Bb]earer[ \t]+(?P<v>[A-Za-z0-9._~+/-]{20,}=*)"),
           left=r"\w", accept=_random_token, tag=_API),
    *rules(_CL, "api_key_leak", "high", "JSON Web Token",
           # The look-behinds after the literal keep the engine from starting inside a run
           # (a diff's sign at the line's start is not part of one).
           (("eyj",), (r"(?P<v>eyJ(?:(?<![\w-]eyJ)|(?<=\n[+-]eyJ)|(?<=\A[+-]eyJ))"
                       r"[A-Za-z0-9_-]{4,}+\.eyJ[A-Za-z0-9_-]{4,}+\.[A-Za-z0-9_-]*+)")),
           accept=not_placeholder, tag=_API),
    *rules(_CL, "config_secret_leak", "high", "YAML/ini/TOML value under a secret-named key",
           *(((t,), r"(?P<k>" + p + r")" + _CONFIG_SEP + _CONFIG_VALUE) for t, p in (
               ("pass", r"pass(?:word|wd|phrase)?"), ("pwd", r"pwd"), ("secret", r"secret"),
               ("token", r"token"), ("key", r"key"), ("credential", r"credentials?"),
               ("jwt", r"jwt"))),
           accept=_config_secret, flags=_I, tag=_SECRET_TAG, unquote=True),
    *rules(_CL, "api_key_leak", "high", "key= assignment with a generated value",
           (("key",), r"key" + _ASSIGN + r"(?P<v>[A-Za-z0-9_+/-]{20,}={0,2})"),
           accept=_key_assignment, flags=_I, tag=_API),
    *rules(_CL, "api_key_leak", "high", "token= assignment with a generated value",
           (("token",), r"token" + _ASSIGN + r"(?P<v>[A-Za-z0-9_.~+/-]{20,}={0,2})"),
           accept=_token_assignment, flags=_I, tag=_API),
)

# ------------------------------------------------------------------ the view

# Colour and cursor escapes (CSI, OSC such as hyperlinks, two-character ones), anywhere.
_ANSI = re.compile(r"(?:\x1b(?:\[[0-?]{0,32}[ -/]{0,8}[@-~]|\][^\x07\x1b\r\n]{0,2048}"
                   r"(?:\x07|\x1b\\)|[@-Z\\-_])){1,64}")
# At a line's start: bash's stderr tag, a line number (read_file, cat -n). A diff's sign
# stays: the line-anchored rules allow one, and a sign cannot be told from a leading
# dash or plus of the line's own text.
_NUMBER = r"[ \t]{0,12}\d{1,9}(?:\t|→)"
_WRAP = r"\[stderr\] (?:" + _NUMBER + r")?|" + _NUMBER
_FIRST_WRAP = re.compile(_WRAP)
_NEXT_WRAP = re.compile(r"\n(?P<w>" + _WRAP + r")")


def _unwrap(text: str, scan: Scan) -> View:
    """The text as the rules read it: escapes and line wrappers set aside."""
    view = View(text)
    if "\x1b" in text:
        view = view.hide([m.span() for m in scan.matches(_ANSI, text)])
    t = view.text
    first = _FIRST_WRAP.match(t)
    spans = [first.span()] if first else []
    spans += [m.span("w") for m in scan.matches(_NEXT_WRAP, t)]
    return view.hide(spans)


# ------------------------------------------------------------- private key blocks

_PEM_LABEL = r"[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?"
_PEM_MARKER = re.compile(r"-----(?P<kind>BEGIN|END) (?P<label>" + _PEM_LABEL + r")-----")
_PEM_LINE = re.compile(_LINE_PREFIX + r"?[+-]?[ \t]*(?:[A-Za-z0-9+/=]*|[A-Za-z-]{1,40}:[ \t].*)"
                       r"[ \t]*\r?")
_PEM_END_LINE = re.compile(_LINE_PREFIX + r"?[+-]?[ \t]*-----END (?P<label>" + _PEM_LABEL
                           + r")-----[\"',;]{0,3}[ \t]*\r?")
_PEM_PREFIX = re.compile(_LINE_PREFIX + r"?[+-]?[ \t]*")
_PEM_INLINE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=\\ \t")
_PEM_MAX = 65536


def _pem_end(text: str, begin: re.Match[str]) -> int:
    """Where the key block that ``begin`` opens ends (its END marker, else its last body line)."""
    end_marker = f"-----END {begin.group('label')}-----"
    line_end = text.find("\n", begin.end())
    line_end = len(text) if line_end < 0 else line_end
    # A key serialised on one line (JSON with \n escapes) ends on the same line.
    same = text.find(end_marker, begin.end(), min(line_end, begin.end() + _PEM_MAX))
    if same >= 0:
        return same + len(end_marker)
    pos = body_end = line_end
    limit = min(len(text), begin.end() + _PEM_MAX)
    while pos < limit:
        nxt = text.find("\n", pos + 1)
        nxt = len(text) if nxt < 0 else nxt
        end = _PEM_END_LINE.fullmatch(text, pos + 1, nxt)
        if end is not None and end.group("label") == begin.group("label"):
            # What follows the marker (a closing quote, a comma) stays.
            return text.find(end_marker, pos + 1, nxt) + len(end_marker)
        if not _PEM_LINE.fullmatch(text, pos + 1, nxt):
            break
        if text[pos + 1:nxt].strip():
            body_end = nxt
        pos = nxt
    return body_end


def _content_start(text: str, line_start: int, line_end: int) -> int:
    """Where a line's own text begins: after its prefix, diff sign and indentation, if any."""
    prefix = _PEM_PREFIX.match(text, line_start, line_end)
    return prefix.end() if prefix else line_start


def _pem_start(text: str, end: re.Match[str], floor: int) -> int | None:
    """Where the body before an END marker whose BEGIN is not in the text starts.

    The output began inside the key (a window, a tail, the second half of a cut):
    walk back over the body, on the marker's own line (a one-line JSON value) and
    then over whole body lines. None when there is no body to hide.
    """
    limit = max(floor, end.start() - _PEM_MAX)
    line_start = text.rfind("\n", limit, end.start()) + 1 or limit
    first = _content_start(text, line_start, end.start())
    start = end.start()
    while start > first and text[start - 1] in _PEM_INLINE:
        start -= 1
    if start > first:  # something else precedes the body on this line
        return start if text[start:end.start()].strip() else None
    found = None
    pos = line_start  # the start of the line after the one being looked at
    while pos - 1 > limit:
        prev = max(limit, text.rfind("\n", limit, pos - 1) + 1)
        if not _PEM_LINE.fullmatch(text, prev, pos - 1):
            break
        if text[prev:pos - 1].strip():
            found = _content_start(text, prev, pos - 1)
        pos = prev
    return found


def _pem_edits(text: str, scan: Scan) -> list[Edit]:
    found: list[Edit] = []
    last = 0
    for m in scan.matches(_PEM_MARKER, text):
        if m.start() < last:
            continue
        if m.group("kind") == "BEGIN":
            start, end = m.start(), _pem_end(text, m)
        else:
            begin = _pem_start(text, m, last)
            if begin is None:
                continue
            start, end = begin, m.end()
        found.append((start, end, "[REDACTED:private_key]"))
        last = end
        scan.add(_CL, "private_key_leak", "high", "PEM private key block")
    return found


def redact_secrets(text: str, lower: str, scan: Scan) -> str:
    """``text`` with every credential the rules find replaced by its tag."""
    view = _unwrap(text, scan)
    if view.at:
        lower = view.text.lower()
    changed = False
    if "private key" in lower:
        found = _pem_edits(view.text, scan)
        view, changed = view.replace(found), bool(found)
    for rule in _SECRETS:
        if triggered(rule, lower, scan):
            found = edits(view.text, rule, scan)
            if found:
                view, changed = view.replace(found), True
    return view.render() if changed else text
