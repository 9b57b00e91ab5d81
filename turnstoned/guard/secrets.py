"""The output guard's credential rules: what is redacted (keys, tokens, passwords in URLs and
env lines, JSON values under secret-named keys, whole PEM/OpenSSH private key blocks), also
behind the line numbers of numbered output."""

from __future__ import annotations

import re

from turnstoned.guard.rules import Rule, Scan, redact, rules, triggered

_I = re.IGNORECASE



_PLACEHOLDER = re.compile(
    r"[{}$<>]|%\(|REDACTED|^(?:your|example|changeme|placeholder|dummy|xxx)|^(.)\1*$"
    r"|^(?:password|passwd|pass|secret|pw)$", _I)
_BOOLEANS = frozenset({"true", "false", "yes", "no", "on", "off", "none", "null", "nil"})
_ENV_SECRET_SEGMENTS = frozenset({
    "SECRET", "SECRETS", "TOKEN", "TOKENS", "PASSWORD", "PASSWORDS", "PASSWD", "PASS",
    "CREDENTIAL", "CREDENTIALS", "DSN", "KEY", "KEYS", "APIKEY", "PRIVATEKEY"})
# A key ending in one of these names something about a secret, not the secret itself.
_ENV_DESCRIPTORS = frozenset({
    "PATH", "FILE", "DIR", "NAME", "ID", "TYPE", "SIZE", "LEN", "LENGTH", "BITS", "COUNT",
    "LIMIT", "MAX", "MIN", "ENABLED", "DISABLED", "ENABLE", "TIMEOUT", "TTL", "EXPIRY",
    "EXPIRES", "PREFIX", "HEADER", "FIELD", "ALGORITHM", "FORMAT", "MODE", "VERSION", "ENV",
    "VAR", "HOST", "PORT", "USER", "USERNAME", "REGION", "ENDPOINT", "URL"})
_ENV_URL_KEYS = frozenset({"DATABASE_URL", "DB_URL", "TURNSTONE_DB_URL"})
_USERINFO = re.compile(r"://[^\s:/@]{0,128}:[^\s@/]{1,256}@")
_JSON_SECRET_NAMES = frozenset({
    "password", "passwd", "pwd", "secret", "client_secret", "secret_key", "api_key", "apikey",
    "access_key", "private_key", "token", "access_token", "refresh_token", "id_token",
    "auth_token", "session_token", "authorization", "proxy_authorization", "credential",
    "credentials", "bearer", "x_api_key"})
_JSON_SECRET_SUFFIXES = ("_password", "_passwd", "_secret", "_token", "_api_key", "_apikey",
                         "_secret_key", "_private_key", "_access_key")
_JSON_NOT_SECRET = frozenset({"page_token", "next_page_token", "next_token", "continuation_token",
                              "sync_token", "pagination_token", "cursor_token", "max_token"})
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SCHEME = re.compile(r"(?:postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?|rediss?|amqps?|sqlite|"
                     r"mssql|oracle|https?)(?:\+[a-z0-9]+)?", _I)
_KEY_OWNER = re.compile(r"(?:.*[_-])?(?:api|secret|access|private|client|auth|app|master|"
                        r"account|subscription)")
_TOKEN_OWNERS = frozenset({"", "access", "refresh", "auth", "session", "id", "api", "bearer",
                           "csrf", "oauth", "github", "gh", "npm", "pypi"})


def _word_before(m: re.Match[str], extra: str = "_-", limit: int = 64) -> str:
    """The run of word characters (plus ``extra``) right before the match, lower-cased."""
    s, end = m.string, m.start()
    i = end
    while i > 0 and end - i < limit and (s[i - 1].isalnum() or s[i - 1] in extra):
        i -= 1
    return s[i:end].lower()


def _unquote(value: str) -> str:
    v = value.strip()
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
        return v[1:-1]
    return v


def not_placeholder(m: re.Match[str]) -> bool:
    return not _PLACEHOLDER.search(m.group("v"))


def _random_token(m: re.Match[str]) -> bool:
    """True for a value that looks generated (letters and digits), not a name or a call."""
    v = m.group("v")
    if not any(c.isdigit() for c in v) or not any(c.isalpha() for c in v):
        return False
    return not v.startswith("/") and m.string[m.end():m.end() + 1] != "("


def _connection_string(m: re.Match[str]) -> bool:
    return bool(_SCHEME.fullmatch(_word_before(m, "+.-"))) and not_placeholder(m)


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
    return segments[-1] not in _ENV_DESCRIPTORS and not _ENV_SECRET_SEGMENTS.isdisjoint(segments)


def _json_secret(m: re.Match[str]) -> bool:
    key = _CAMEL.sub("_", m.group("k")).lower().replace("-", "_")
    if key in _JSON_NOT_SECRET:
        return False
    if key not in _JSON_SECRET_NAMES and not key.endswith(_JSON_SECRET_SUFFIXES):
        return False
    value = m.group("v")
    if _PLACEHOLDER.search(value):
        return False
    if key.endswith("authorization"):
        return len(value.split()[-1]) >= 8
    return not any(c.isspace() for c in value)


_CL = "credential_leak"
_API, _SECRET_TAG = "[REDACTED:api_key]", "[REDACTED:secret]"
_ASSIGN = r"[\"']?[ \t]*[=:][ \t]*[\"']?"
# What precedes a line's own text in numbered output: read_file's and `cat -n`'s
# "   12<TAB>", or search's and `grep -n`'s "path:12:" ("path-12-" for context lines).
_LINE_PREFIX = r"(?P<p>[ \t]*\d{1,9}\t|[^\r\n:]{1,1024}:\d{1,9}[:-])"
# Order matters: whole-structure shapes first, so a key inside an .env line or a
# JSON value is reported once, under the structure that holds it.
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
           ((":",), (r"^" + _LINE_PREFIX + r"?[ \t]*(?P<k>[A-Z][A-Z0-9_]{0,63}):[ \t]+"
                     r"(?P<v>\"[^\"\r\n]+\"|'[^'\r\n]+'|[^\s#\"'][^\s]*)(?=[ \t]+#|[ \t]*\r?$)")),
           accept=_env_secret, flags=re.MULTILINE, tag=_SECRET_TAG),
    *rules(_CL, "json_secret_leak", "high", "JSON/dict value under a secret-named key",
           ((":",), (r"(?P<q>[\"'])(?P<k>[A-Za-z0-9_-]{1,64})(?P=q)\s*:\s*(?P<q2>[\"'])"
                    r"(?P<v>[^\"'\\\r\n]{8,512})(?P=q2)")),
           accept=_json_secret, tag=_SECRET_TAG),
    *rules(_CL, "api_key_leak", "high", "OpenAI/Anthropic-style secret key (sk-...)",
           (("sk-",), r"(?P<v>sk-(?:proj-|ant-|svcacct-|admin-)?[A-Za-z0-9_-]{20,})"),
           left=r"[\w-]", accept=_random_token, tag=_API),
    *rules(_CL, "api_key_leak", "high", "Stripe secret key",
           (("k_live_", "k_test_"), r"(?P<v>[sr]k_(?:live|test)_[A-Za-z0-9]{20,})"),
           left=r"[\w-]", tag=_API),
    *rules(_CL, "api_key_leak", "high", "GitHub token",
           (("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), r"(?P<v>gh[pousr]_[A-Za-z0-9]{36,255})"),
           (("github_pat_",), r"(?P<v>github_pat_[A-Za-z0-9_]{22,255})"), left=r"\w", tag=_API),
    *rules(_CL, "api_key_leak", "high", "AWS access key id",
           (("akia", "asia"), r"(?P<v>(?:AKIA|ASIA)[0-9A-Z]{16})(?![0-9A-Z])"),
           left=r"[A-Z0-9]", tag=_API),
    *rules(_CL, "api_key_leak", "high", "Google API key",
           (("aiza",), r"(?P<v>AIza[0-9A-Za-z_-]{35})(?![\w-])"), left=r"[\w-]", tag=_API),
    *rules(_CL, "api_key_leak", "high", "Slack token",
           (("xox",), r"(?P<v>xox[abprs]-[A-Za-z0-9-]{10,})"), left=r"[\w-]", tag=_API),
    *rules(_CL, "bearer_token_leak", "high", "Bearer token",
           (("bearer",), r"[Bb]earer[ \t]+(?P<v>[A-Za-z0-9._~+/-]{20,}=*)"),
           left=r"\w", accept=_random_token, tag=_API),
    *rules(_CL, "api_key_leak", "high", "key= assignment with a generated value",
           (("key",), r"key" + _ASSIGN + r"(?P<v>[A-Za-z0-9_+/-]{20,}={0,2})"),
           accept=_key_assignment, flags=_I, tag=_API),
    *rules(_CL, "api_key_leak", "high", "token= assignment with a generated value",
           (("token",), r"token" + _ASSIGN + r"(?P<v>[A-Za-z0-9_.~+/-]{20,}={0,2})"),
           accept=_token_assignment, flags=_I, tag=_API),
)

_PEM_LABEL = r"[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?"
_PEM_MARKER = re.compile(r"-----(?P<kind>BEGIN|END) (?P<label>" + _PEM_LABEL + r")-----")
_PEM_LINE = re.compile(_LINE_PREFIX + r"?[ \t]*(?:[A-Za-z0-9+/=]*|[A-Za-z-]{1,40}:[ \t].*)[ \t]*\r?")
_PEM_END_LINE = re.compile(_LINE_PREFIX + r"?[ \t]*-----END (?P<label>" + _PEM_LABEL
                           + r")-----[ \t]*\r?")
_PEM_PREFIX = re.compile(_LINE_PREFIX)
_PEM_INLINE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=\\ \t")
_PEM_MAX = 65536


def _pem_end(text: str, begin: re.Match[str]) -> int:
    """Where the key block that ``begin`` opens ends (its END line, else its last body line)."""
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
            return nxt
        if not _PEM_LINE.fullmatch(text, pos + 1, nxt):
            break
        if text[pos + 1:nxt].strip():
            body_end = nxt
        pos = nxt
    return body_end


def _content_start(text: str, line_start: int, line_end: int) -> int:
    """Where a line's own text begins, after a line-number prefix if it has one."""
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


def _redact_pem(text: str, scan: Scan) -> str:
    pieces: list[str] = []
    last = 0
    for m in scan.matches(_PEM_MARKER, text):
        if m.start() < last:
            continue
        if m.group("kind") == "BEGIN":
            start, end = m.start(), _pem_end(text, m)
        else:
            found = _pem_start(text, m, last)
            if found is None:
                continue
            start, end = found, m.end()
        pieces += [text[last:start], "[REDACTED:private_key]"]
        last = end
        scan.add(_CL, "private_key_leak", "high", "PEM private key block")
    return "".join(pieces) + text[last:] if pieces else text


def redact_secrets(text: str, lower: str, scan: Scan) -> str:
    if "private key" in lower:
        text = _redact_pem(text, scan)
    for rule in _SECRETS:
        if triggered(rule, lower):
            text = redact(text, rule, scan)
    return text
