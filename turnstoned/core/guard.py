"""Heuristic output guard (phase 4a): flag risky tool output and redact credentials.

Pure and regex-based: no I/O, no model. It annotates and never blocks; the only
change it makes to the text is credential redaction. Every pattern is linear
(literal anchors, bounded or non-overlapping repetition), so hostile output
cannot make it backtrack. The first MiB of a text is always scanned in full;
beyond that, scanning stops once the wall-clock budget is spent.

Speed: each pattern starts with a literal (boundary checks that would sit in
front of it are done on the preceding character instead), which lets the regex
engine skip ahead instead of trying every position, and a rule runs only when
one of its trigger substrings occurs in the text at all.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

RISK_ORDER: dict[str, int] = {"low": 0, "medium": 1, "high": 2}
CATEGORIES = ("prompt_injection", "credential_leak", "encoded_payload", "adversarial_url",
              "info_disclosure")
REDACTION_NOTICE = "Credentials have been redacted. Do not attempt to reconstruct redacted values."
_CHUNK = 1 << 20
_OVERLAP = 8192
_I = re.IGNORECASE


@dataclass(frozen=True)
class Finding:
    """One kind of problem seen in a text (repeats are counted in ``detail``)."""

    category: str
    flag: str
    risk: str
    detail: str


@dataclass(frozen=True)
class GuardResult:
    """What the model should see, and why."""

    text: str
    findings: tuple[Finding, ...]
    redacted: bool

    @property
    def risk(self) -> str | None:
        """The highest risk among the findings, or None when nothing was flagged."""
        if not self.findings:
            return None
        return max((f.risk for f in self.findings), key=RISK_ORDER.__getitem__)

    @property
    def flags(self) -> tuple[str, ...]:
        """Categories and flags in finding order, without repeats."""
        seen: dict[str, None] = {}
        for f in self.findings:
            seen.setdefault(f.category)
            seen.setdefault(f.flag)
        return tuple(seen)


def _always(m: re.Match[str]) -> bool:
    return True


@dataclass(frozen=True)
class _Rule:
    """A flag raised for each match of ``pattern`` that passes ``left`` and ``accept``.

    ``left`` is a one-character class that must not precede the match. A rule
    with a ``tag`` redacts: its named group ``v`` is replaced by the tag. The rule
    runs only if one of its lower-case ``triggers`` occurs in the text.
    """

    category: str
    flag: str
    risk: str
    detail: str
    triggers: tuple[str, ...]
    pattern: re.Pattern[str]
    left: re.Pattern[str] | None = None
    accept: Callable[[re.Match[str]], bool] = _always
    tag: str | None = None

    def hit(self, m: re.Match[str]) -> bool:
        at = m.start()
        if self.left is not None and at and self.left.match(m.string, at - 1):
            return False
        return self.accept(m)


class _Scan:
    """Per-call state: the deadline and a tally of what was seen."""

    def __init__(self, budget_seconds: float) -> None:
        self.deadline = time.monotonic() + budget_seconds
        self.tally: dict[tuple[str, str, str, str], int] = {}

    def add(self, category: str, flag: str, risk: str, detail: str) -> None:
        key = (category, flag, risk, detail)
        self.tally[key] = self.tally.get(key, 0) + 1

    def matches(self, pattern: re.Pattern[str], text: str) -> Iterator[re.Match[str]]:
        """Non-overlapping matches; past the first chunk, only while the budget lasts."""
        n = len(text)
        if n <= _CHUNK + _OVERLAP:
            yield from pattern.finditer(text)
            return
        last_end = 0
        for start in range(0, n, _CHUNK):
            if start and time.monotonic() >= self.deadline:
                return
            # Windows overlap so a match straddling a chunk edge is still seen whole.
            for m in pattern.finditer(text, start, min(n, start + _CHUNK + _OVERLAP)):
                if m.start() >= start + _CHUNK:
                    break
                if m.start() >= last_end:
                    last_end = m.end()
                    yield m

    def findings(self) -> tuple[Finding, ...]:
        order = {c: i for i, c in enumerate(CATEGORIES)}
        keys = sorted(self.tally, key=lambda k: order.get(k[0], len(order)))
        return tuple(Finding(c, f, r, d if self.tally[(c, f, r, d)] == 1
                             else f"{d} (x{self.tally[(c, f, r, d)]})") for c, f, r, d in keys)


def _rules(category: str, flag: str, risk: str, detail: str,
           *alternatives: tuple[tuple[str, ...], str], left: str | None = None,
           accept: Callable[[re.Match[str]], bool] = _always, flags: int = 0,
           tag: str | None = None) -> tuple[_Rule, ...]:
    """One rule per (triggers, pattern) alternative, all reporting the same flag."""
    left_re = re.compile(left) if left else None
    return tuple(_Rule(category, flag, risk, detail, triggers, re.compile(p, flags), left_re,
                       accept, tag) for triggers, p in alternatives)


# ----------------------------------------------------------------- credentials

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


def _not_placeholder(m: re.Match[str]) -> bool:
    return not _PLACEHOLDER.search(m.group("v"))


def _random_token(m: re.Match[str]) -> bool:
    """True for a value that looks generated (letters and digits), not a name or a call."""
    v = m.group("v")
    if not any(c.isdigit() for c in v) or not any(c.isalpha() for c in v):
        return False
    return not v.startswith("/") and m.string[m.end():m.end() + 1] != "("


def _connection_string(m: re.Match[str]) -> bool:
    return bool(_SCHEME.fullmatch(_word_before(m, "+.-"))) and _not_placeholder(m)


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
_SECRETS: tuple[_Rule, ...] = (
    *_rules(_CL, "connection_string_leak", "high", "connection string with an inline password",
            (("://",), r"://[^\s:/@]{0,128}:(?P<v>[^\s@/]{1,256})@"),
            accept=_connection_string, tag="[REDACTED:password]"),
    *_rules(_CL, "env_file_leak", "high", "env-style line with a secret-named key",
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
    *_rules(_CL, "json_secret_leak", "high", "JSON/dict value under a secret-named key",
            ((":",), (r"(?P<q>[\"'])(?P<k>[A-Za-z0-9_-]{1,64})(?P=q)\s*:\s*(?P<q2>[\"'])"
                     r"(?P<v>[^\"'\\\r\n]{8,512})(?P=q2)")),
            accept=_json_secret, tag=_SECRET_TAG),
    *_rules(_CL, "api_key_leak", "high", "OpenAI/Anthropic-style secret key (sk-...)",
            (("sk-",), r"(?P<v>sk-(?:proj-|ant-|svcacct-|admin-)?[A-Za-z0-9_-]{20,})"),
            left=r"[\w-]", accept=_random_token, tag=_API),
    *_rules(_CL, "api_key_leak", "high", "Stripe secret key",
            (("k_live_", "k_test_"), r"(?P<v>[sr]k_(?:live|test)_[A-Za-z0-9]{20,})"),
            left=r"[\w-]", tag=_API),
    *_rules(_CL, "api_key_leak", "high", "GitHub token",
            (("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), r"(?P<v>gh[pousr]_[A-Za-z0-9]{36,255})"),
            (("github_pat_",), r"(?P<v>github_pat_[A-Za-z0-9_]{22,255})"), left=r"\w", tag=_API),
    *_rules(_CL, "api_key_leak", "high", "AWS access key id",
            (("akia", "asia"), r"(?P<v>(?:AKIA|ASIA)[0-9A-Z]{16})(?![0-9A-Z])"),
            left=r"[A-Z0-9]", tag=_API),
    *_rules(_CL, "api_key_leak", "high", "Google API key",
            (("aiza",), r"(?P<v>AIza[0-9A-Za-z_-]{35})(?![\w-])"), left=r"[\w-]", tag=_API),
    *_rules(_CL, "api_key_leak", "high", "Slack token",
            (("xox",), r"(?P<v>xox[abprs]-[A-Za-z0-9-]{10,})"), left=r"[\w-]", tag=_API),
    *_rules(_CL, "bearer_token_leak", "high", "Bearer token",
            (("bearer",), r"[Bb]earer[ \t]+(?P<v>[A-Za-z0-9._~+/-]{20,}=*)"),
            left=r"\w", accept=_random_token, tag=_API),
    *_rules(_CL, "api_key_leak", "high", "key= assignment with a generated value",
            (("key",), r"key" + _ASSIGN + r"(?P<v>[A-Za-z0-9_+/-]{20,}={0,2})"),
            accept=_key_assignment, flags=_I, tag=_API),
    *_rules(_CL, "api_key_leak", "high", "token= assignment with a generated value",
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


def _redact_pem(text: str, scan: _Scan) -> str:
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


def _triggered(rule: _Rule, lower: str) -> bool:
    return not rule.triggers or any(t in lower for t in rule.triggers)


def _redact(text: str, rule: _Rule, scan: _Scan) -> str:
    pieces: list[str] = []
    last = 0
    for m in scan.matches(rule.pattern, text):
        if not rule.hit(m):
            continue
        pieces += [text[last:m.start("v")], rule.tag or ""]
        last = m.end("v")
        scan.add(rule.category, rule.flag, rule.risk, rule.detail)
    return "".join(pieces) + text[last:] if pieces else text


def _redact_secrets(text: str, lower: str, scan: _Scan) -> str:
    if "private key" in lower:
        text = _redact_pem(text, scan)
    for rule in _SECRETS:
        if _triggered(rule, lower):
            text = _redact(text, rule, scan)
    return text


# ------------------------------------------------------------ other categories

_EXEC_WORDS = ("eval", "exec", "script", "payload", "shell", "command", "decode", "import", "atob")
_IMAGE_WORDS = re.compile(r"image/|font/|\.(?:png|jpe?g|gif|webp|svg|ico|bmp)\b", _I)


def _base64_exec(m: re.Match[str]) -> bool:
    run = m.group(0)
    if not (any(c.isupper() for c in run) and any(c.islower() for c in run)
            and any(c.isdigit() for c in run)):
        return False
    before = m.string[max(0, m.start() - 100):m.start()]
    lower = before.lower()
    return any(w in lower for w in _EXEC_WORDS) and not _IMAGE_WORDS.search(before)


def _valid_octets(m: re.Match[str]) -> bool:
    return all(int(part) <= 255 for part in m.group(0).split("."))


_PI = "prompt_injection"
_RULES: tuple[_Rule, ...] = (
    *_rules(_PI, "override_phrase", "high", "instruction-override phrase",
            (("ignore",), (r"ignore\s+(?:(?:all|any|your|the|my|these|those|every)\s+){0,3}"
                          r"(?:previous|prior|above|earlier|preceding|former|original|system)\s+"
                          r"(?:instructions?|prompts?|rules|directions|directives|guidelines|"
                          r"context|messages?)\b")),
            (("disregard",), (r"disregard\s+(?:(?:all|any|the|your|my)\s+){0,2}"
                             r"(?:previous|prior|above|earlier|preceding)\b")),
            (("forget",), (r"forget\s+(?:(?:all|everything|about)\s+){0,2}(?:your|the|previous|"
                          r"prior|all)\s+(?:(?:previous|prior)\s+)?(?:rules|instructions|"
                          r"guidelines|training|directives|constraints)\b")),
            (("instruction",), r"new\s+(?:system\s+)?instructions?\s*:"),
            (("you",), (r"you\s+are\s+now\s+(?:a|an|the|my|DAN|acting|operating|free|"
                       r"unrestricted|jailbroken|no\s+longer|going\s+to)\b")),
            left=r"\w", flags=_I),
    *_rules(_PI, "role_injection", "high", "chat role or turn-boundary marker",
            (("role",), (r"\{\s*[\"']role[\"']\s*:\s*[\"']system[\"'](?!\s*,\s*[\"']content[\"']"
                        r"\s*:\s*(?:[A-Za-z_][\w.]*[,(})\]]|f[\"']))")),
            (("<|",), (r"<\|(?:im_start\|>\s*system|im_sep\|>|start_header_id\|>\s*system|"
                      r"system\|>)")),
            (("</",), r"</(?:tool_result|function_output|tool_output)>"), flags=_I),
    *_rules(_PI, "instruction_override", "high", "instruction-override keyword",
            (("prompt",), r"(?i:system\s+prompt\s*:)"),
            (("mandatory:", "override:"), r"(?:MANDATORY|OVERRIDE):"),
            (("[system]", "[inst]"), r"\[(?:SYSTEM|INST)\]"),
            (("<<sys>>",), r"<<SYS>>"), left=r"\w"),
    *_rules(_PI, "meta_injection", "high", "attempt to reassign the assistant's role",
            (("pretend",), r"pretend\s+(?:that\s+)?you\s+are\b"),
            (("act",), r"act\s+as\s+if\s+(?:that\s+)?you\s+are\b"),
            (("your",), (r"your\s+new\s+(?:role|identity|persona|instructions|task|purpose|"
                        r"goal)\s+is\b")),
            (("from",), r"from\s+now\s+on,?\s+you\s+(?:are|will|must|should|shall)\b"),
            (("your",), (r"I\s+am\s+your\s+(?:new\s+)?(?:admin|administrator|operator|developer|"
                        r"creator|owner|master|supervisor)\b")),
            left=r"\w", flags=_I),
    *_rules("encoded_payload", "data_uri", "medium", "executable data: URI",
            (("data:",), (r"data:(?:text/html|text/javascript|application/(?:x-)?javascript|"
                         r"application/xhtml\+xml)[;,]")), left=r"\w", flags=_I),
    *_rules("encoded_payload", "hex_escapes", "medium", "run of 10+ \\xNN escapes",
            (("\\x",), r"\\x[0-9a-fA-F]{2}(?:\\x[0-9a-fA-F]{2}){9,}")),
    *_rules("encoded_payload", "base64_exec", "medium", "long base64 run next to an exec word",
            (_EXEC_WORDS, r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{200,}={0,2}"),
            accept=_base64_exec),
    *_rules("adversarial_url", "credential_in_url", "medium", "credential in a URL query",
            (("=",), (r"[?&](?:access_token|api_key|apikey|api-key|token|key|secret|"
                     r"client_secret|password|passwd|pwd|auth|sig|signature|x-amz-signature|"
                     r"x-amz-security-token)=(?P<v>[^&#\s\"'<>]{6,})")),
            accept=_not_placeholder, flags=_I),
    *_rules("adversarial_url", "cloud_metadata", "medium", "cloud metadata endpoint",
            (("169.254.",), r"169\.254\.(?:169\.254|170\.2)(?!\d)"),
            (("100.100.100.200",), r"100\.100\.100\.200(?!\d)"), left=r"[\d.]"),
    *_rules("adversarial_url", "cloud_metadata", "medium", "cloud metadata endpoint",
            (("metadata.",), r"metadata\.(?:google\.internal|azure\.com)\b"),
            (("fd00:ec2",), r"fd00:ec2::254\b"), left=r"\w", flags=_I),
    *_rules("info_disclosure", "private_ip", "low", "private (RFC 1918) IPv4 address",
            (("10.",), r"10(?:\.\d{1,3}){3}(?!\.?\d)"),
            (("172.",), r"172\.(?:1[6-9]|2\d|3[01])(?:\.\d{1,3}){2}(?!\.?\d)"),
            (("192.168.",), r"192\.168(?:\.\d{1,3}){2}(?!\.?\d)"),
            left=r"[\d.]", accept=_valid_octets),
    *_rules("info_disclosure", "cloud_identity", "low", "cloud instance-identity vocabulary",
            (("instance-id",), r"instance-id(?:entity)?\b"),
            (("computemetadata",), r"computeMetadata\b"),
            (("imds",), r"IMDS(?:v[12])?\b"), (("ami-id",), r"ami-id\b"), left=r"\w"),
    *_rules("info_disclosure", "sensitive_path", "low", "sensitive file path",
            ((".env", ".ssh/", ".aws/", ".kube/", ".gnupg/", ".docker/", "id_rsa", "id_dsa",
              "id_ecdsa", "id_ed25519", "/credentials", "/etc/shadow", ".netrc", ".pgpass",
              ".pem"),
             # The look-behinds sit after the first character so the engine can skip ahead.
             (r"\.(?:(?<![\w.-]\.)env(?:\.[\w-]+)?(?![\w-])|(?<![\w-]\.)(?:ssh|aws|kube|gnupg|"
             r"docker)/|(?<![\w-]\.)(?:netrc|pgpass)\b|(?<=\w\.)pem\b)"
             r"|id_(?<!\wid_)(?:rsa|dsa|ecdsa|ed25519)\b|/(?:credentials|etc/shadow)\b"))),
)

_IMPERATIVE_TAIL = (r"\s+(?:next\s+|immediate\s+)?(?:actions?|response|decision|"
                    r"course\s+of\s+action|step|behaviou?r)\b")
_IMPERATIVES = _rules(
    _PI, "camouflaged_injection", "medium",
    "directive phrased as a recommended action with authority or a command verb",
    *(((w,), w + _IMPERATIVE_TAIL) for w in ("recommended", "appropriate", "correct", "proper",
                                               "required")),
    (("acceptable",), r"only\s+acceptable" + _IMPERATIVE_TAIL), left=r"\w", flags=_I)
_AUTHORITY = re.compile(
    r"\b(?:per|consistent\s+with|pursuant\s+to|in\s+(?:accordance|line|compliance)\s+with|"
    r"as\s+(?:required|mandated)\s+by)\s+(?:the\s+)?(?:our|company|corporate|internal|firm|"
    r"organi[sz]ation(?:al)?)(?:'s)?\s+(?:[a-z-]+\s+){0,3}?(?:polic(?:y|ies)|guidelines?|"
    r"procedures?|protocols?|rules|directives?|standards?)\b", _I)
_CAPS_VERB = re.compile(
    r"\b(?:SELL|BUY|TRANSFER|DELETE|APPROVE|WIPE|OVERRIDE|DISABLE|GRANT|REVOKE|SEND|PAY|WIRE|"
    r"EXECUTE|DROP|PURGE|DESTROY|ERASE|RELEASE|AUTHORIZE|LIQUIDATE|ESCALATE)\b")
_CAMOUFLAGE_WINDOW = 300
_MARKER = re.compile(r"\[(?:start|end)[ _-]?(?:system-reminder|tool[_-]output|sender-label)\b"
                     r"[^\]\r\n]{0,200}\]", _I)


def _detect_camouflage(text: str, lower: str, scan: _Scan) -> None:
    """An imperative 'recommended action' phrase with an authority frame or a CAPS verb nearby."""
    for rule in _IMPERATIVES:
        if not _triggered(rule, lower):
            continue
        for m in scan.matches(rule.pattern, text):
            lo = max(0, m.start() - _CAMOUFLAGE_WINDOW)
            hi = min(len(text), m.end() + _CAMOUFLAGE_WINDOW)
            if rule.hit(m) and (_AUTHORITY.search(text, lo, hi) or _CAPS_VERB.search(text, lo, hi)):
                scan.add(rule.category, rule.flag, rule.risk, rule.detail)
                return


def _detect_markers(text: str, scan: _Scan, nonce: str | None) -> None:
    for m in scan.matches(_MARKER, text):
        if nonce and nonce in m.group(0):
            scan.add(_PI, "operator_marker_leak", "high", "this session's trust marker in output")
        else:
            scan.add(_PI, "operator_marker_forgery", "low", "imitation of a trust marker")


def _detect(text: str, lower: str, scan: _Scan, nonce: str | None) -> None:
    for rule in _RULES:
        if _triggered(rule, lower):
            for m in scan.matches(rule.pattern, text):
                if rule.hit(m):
                    scan.add(rule.category, rule.flag, rule.risk, rule.detail)
    _detect_camouflage(text, lower, scan)
    if "[start" in lower or "[end" in lower:
        _detect_markers(text, scan, nonce)


# -------------------------------------------------------------------- public

def check(text: str, *, redact: bool = True, budget_seconds: float = 0.5,
          nonce: str | None = None) -> GuardResult:
    """Scan one text result; with ``redact``, credentials in the returned text are replaced.

    The first MiB is always scanned; ``budget_seconds`` bounds the scan of the rest,
    which simply stops when it runs out. ``nonce`` is this session's trust-marker
    secret, if it has one: a marker carrying it is a leak (high), any other a forgery (low).
    """
    if not text:
        return GuardResult(text, (), False)
    scan = _Scan(budget_seconds)
    lower = text.lower()
    # Credentials first: redaction is the one protective effect, so it gets the budget first.
    clean = _redact_secrets(text, lower, scan)
    _detect(text, lower, scan, nonce)
    findings = scan.findings()
    if redact and clean != text:
        return GuardResult(clean, findings, True)
    return GuardResult(text, findings, False)


def advisory(call_label: str, result: GuardResult) -> str:
    """The system advisory for a flagged result ('' when nothing was flagged)."""
    if not result.findings or result.risk is None:
        return ""
    lines = [f"Output guard: {', '.join(result.flags)} ({result.risk.upper()}) in {call_label}"]
    lines += [f"  - {f.flag} ({f.risk}): {f.detail}" for f in result.findings]
    if result.redacted:
        lines.append(REDACTION_NOTICE)
    return "\n".join(lines)
