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
from dataclasses import dataclass

from turnstoned.guard.rules import RISK_ORDER, Finding, Rule, Scan, rules, triggered
from turnstoned.guard.secrets import not_placeholder, redact_secrets

__all__ = ["REDACTION_NOTICE", "Finding", "GuardResult", "advisory", "check"]

REDACTION_NOTICE = "Credentials have been redacted. Do not attempt to reconstruct redacted values."
_I = re.IGNORECASE


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
_RULES: tuple[Rule, ...] = (
    *rules(_PI, "override_phrase", "high", "instruction-override phrase",
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
    *rules(_PI, "role_injection", "high", "chat role or turn-boundary marker",
           (("role",), (r"\{\s*[\"']role[\"']\s*:\s*[\"']system[\"'](?!\s*,\s*[\"']content[\"']"
                       r"\s*:\s*(?:[A-Za-z_][\w.]*[,(})\]]|f[\"']))")),
           (("<|",), (r"<\|(?:im_start\|>\s*system|im_sep\|>|start_header_id\|>\s*system|"
                     r"system\|>)")),
           (("</",), r"</(?:tool_result|function_output|tool_output)>"), flags=_I),
    *rules(_PI, "instruction_override", "high", "instruction-override keyword",
           (("prompt",), r"(?i:system\s+prompt\s*:)"),
           (("mandatory:", "override:"), r"(?:MANDATORY|OVERRIDE):"),
           (("[system]", "[inst]"), r"\[(?:SYSTEM|INST)\]"),
           (("<<sys>>",), r"<<SYS>>"), left=r"\w"),
    *rules(_PI, "meta_injection", "high", "attempt to reassign the assistant's role",
           (("pretend",), r"pretend\s+(?:that\s+)?you\s+are\b"),
           (("act",), r"act\s+as\s+if\s+(?:that\s+)?you\s+are\b"),
           (("your",), (r"your\s+new\s+(?:role|identity|persona|instructions|task|purpose|"
                       r"goal)\s+is\b")),
           (("from",), r"from\s+now\s+on,?\s+you\s+(?:are|will|must|should|shall)\b"),
           (("your",), (r"I\s+am\s+your\s+(?:new\s+)?(?:admin|administrator|operator|developer|"
                       r"creator|owner|master|supervisor)\b")),
           left=r"\w", flags=_I),
    *rules("encoded_payload", "data_uri", "medium", "executable data: URI",
           (("data:",), (r"data:(?:text/html|text/javascript|application/(?:x-)?javascript|"
                        r"application/xhtml\+xml)[;,]")), left=r"\w", flags=_I),
    *rules("encoded_payload", "hex_escapes", "medium", "run of 10+ \\xNN escapes",
           (("\\x",), r"\\x[0-9a-fA-F]{2}(?:\\x[0-9a-fA-F]{2}){9,}")),
    *rules("encoded_payload", "base64_exec", "medium", "long base64 run next to an exec word",
           (_EXEC_WORDS, r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{200,}={0,2}"),
           accept=_base64_exec),
    *rules("adversarial_url", "credential_in_url", "medium", "credential in a URL query",
           (("=",), (r"[?&](?:access_token|api_key|apikey|api-key|token|key|secret|"
                    r"client_secret|password|passwd|pwd|auth|sig|signature|x-amz-signature|"
                    r"x-amz-security-token)=(?P<v>[^&#\s\"'<>]{6,})")),
           accept=not_placeholder, flags=_I),
    *rules("adversarial_url", "cloud_metadata", "medium", "cloud metadata endpoint",
           (("169.254.",), r"169\.254\.(?:169\.254|170\.2)(?!\d)"),
           (("100.100.100.200",), r"100\.100\.100\.200(?!\d)"), left=r"[\d.]"),
    *rules("adversarial_url", "cloud_metadata", "medium", "cloud metadata endpoint",
           (("metadata.",), r"metadata\.(?:google\.internal|azure\.com)\b"),
           (("fd00:ec2",), r"fd00:ec2::254\b"), left=r"\w", flags=_I),
    *rules("info_disclosure", "private_ip", "low", "private (RFC 1918) IPv4 address",
           (("10.",), r"10(?:\.\d{1,3}){3}(?!\.?\d)"),
           (("172.",), r"172\.(?:1[6-9]|2\d|3[01])(?:\.\d{1,3}){2}(?!\.?\d)"),
           (("192.168.",), r"192\.168(?:\.\d{1,3}){2}(?!\.?\d)"),
           left=r"[\d.]", accept=_valid_octets),
    *rules("info_disclosure", "cloud_identity", "low", "cloud instance-identity vocabulary",
           (("instance-id",), r"instance-id(?:entity)?\b"),
           (("computemetadata",), r"computeMetadata\b"),
           (("imds",), r"IMDS(?:v[12])?\b"), (("ami-id",), r"ami-id\b"), left=r"\w"),
    *rules("info_disclosure", "sensitive_path", "low", "sensitive file path",
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
_IMPERATIVES = rules(
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


def _detect_camouflage(text: str, lower: str, scan: Scan) -> None:
    """An imperative 'recommended action' phrase with an authority frame or a CAPS verb nearby."""
    for rule in _IMPERATIVES:
        if not triggered(rule, lower, scan):
            continue
        for m in scan.matches(rule.pattern, text):
            lo = max(0, m.start() - _CAMOUFLAGE_WINDOW)
            hi = min(len(text), m.end() + _CAMOUFLAGE_WINDOW)
            if rule.hit(m) and (_AUTHORITY.search(text, lo, hi) or _CAPS_VERB.search(text, lo, hi)):
                scan.add(rule.category, rule.flag, rule.risk, rule.detail)
                return


def _detect_markers(text: str, scan: Scan, nonce: str | None) -> None:
    for m in scan.matches(_MARKER, text):
        if nonce and nonce in m.group(0):
            scan.add(_PI, "operator_marker_leak", "high", "this session's trust marker in output")
        else:
            scan.add(_PI, "operator_marker_forgery", "low", "imitation of a trust marker")


def _detect(text: str, lower: str, scan: Scan, nonce: str | None) -> None:
    for rule in _RULES:
        if triggered(rule, lower, scan):
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
    scan = Scan(budget_seconds)
    lower = text.lower()
    # Credentials first: redaction is the one protective effect, so it gets the budget first.
    clean = redact_secrets(text, lower, scan)
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
