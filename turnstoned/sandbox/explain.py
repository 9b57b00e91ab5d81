"""What a failed sandboxed command likely ran into, read from its exit code and output.

The sandbox makes the kernel answer EACCES ("Permission denied": a path Landlock does not
grant, ``socket()``), EPERM ("Operation not permitted": a signal out of the domain), EXDEV
("Invalid cross-device link": a link or rename across what Landlock grants) and ENOSYS
(io_uring), or kills with SIGSYS (another syscall ABI). Tools word these in their own ways;
the patterns below cover coreutils, bash, git, Python, Node, Go, curl, ssh and pip. Under
the sandbox no name resolves and no socket opens, so a resolution or connection failure is
the sandbox too. A denial on a path inside the workspace is not the sandbox's doing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from turnstoned import places

_TAIL = 65536  # only the end of a long output is read
_EXIT_SIGSYS = (-31, 128 + 31)
_DENIED = re.compile(r"permission denied|\bEACCES\b|os error 13\b", re.IGNORECASE)
_XDEV = re.compile(r"invalid cross-device link|\bEXDEV\b|os error 18\b", re.IGNORECASE)
_EPERM = re.compile(r"operation not permitted|\bEPERM\b|os error 1\b", re.IGNORECASE)
_SIGNAL = re.compile(r"\bkill\b|\bsignal|pkill|killall|os\.kill|process\.kill", re.IGNORECASE)
_PID = re.compile(r"\((\d+)\)|\bpid (\d+)|kill\(\s*(\d+)")
_NETWORK = re.compile(
    r"could not resolve|couldn'?t resolve|name or service not known|temporary failure in name "
    r"resolution|failed to establish a new connection|couldn'?t connect to server|network is "
    r"unreachable|getaddrinfo|\bENOTFOUND\b|\bEAI_AGAIN\b|nodename nor servname|dial tcp|"
    r"no address associated with hostname|unable to access '(?:https?|git|ssh)://",
    re.IGNORECASE,
)
_SOCKET = re.compile(r"\bsocket\b|\bconnect\b|socket\.py", re.IGNORECASE)
_WRITE = re.compile(
    r"cannot (?:touch|create|remove|move|overwrite|make|mkdir|link|lock|write|rename|unlink)|"
    r"could not (?:create|lock|write|open .* for writing|rename|remove|unlink)|couldn'?t "
    r"(?:open temporary|create|write|edit)|for writing|read-only|failed to create|"
    r"(?:EACCES|EPERM): [^,]*, (?:mkdir|open|rename|unlink|rmdir|symlink|copyfile|link|"
    r"chmod|utime|write)|\b(?:mkdir|rename|unlink|remove|create|write|chmod)\b",
    re.IGNORECASE,
)
_READ = re.compile(r"cannot (?:open|access|read|stat)|\bcat:|\bls:|\bread\b|for reading|\bopen\b",
                   re.IGNORECASE)  # fmt: skip
# A path: quoted, a bare word starting with / or ~/ (without trailing punctuation), or the
# word before ": Permission denied" ("cat: name: Permission denied", bash's "line 3: name: ...").
_PATH = re.compile(r"'([^'\s][^']*)'|\"([^\"\s][^\"]*)\"|‘([^’]+)’|((?:~/|/)[^\s'\":,;()]+)|"
                   r"(?:^|:\s)([^\s:'\"/][^\s:'\"]*)(?=:\s+permission denied)", re.IGNORECASE)
_CALLS = frozenset({"socket", "connect", "bind", "sendto", "sendmsg", "send", "kill"})
_PROC_PROCESS = re.compile(r"/proc/(\d+)/")
_READABLE = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/snap",
             "/nix", "/etc", "/proc", "/sys", "/var/lib", "/var/cache")  # fmt: skip


def explain(exit_code: int, output: str, *, inside: Iterable[Path] = (),
            cwd: Path | None = None) -> str | None:  # fmt: skip
    """One line on what the sandbox likely stopped in a failed command ("a write outside the
    workspace: /etc/x", "a network connection", ...), or None when the output does not point
    at it. ``inside``: the workspace and other writable roots (denials there are not it);
    ``cwd``: where the command ran (relative names resolve from there, symlinks followed)."""
    if exit_code == 0:
        return None
    text = output[-_TAIL:]
    if exit_code == 126 and "turnstoned sandbox: " in text:
        reason = text.split("turnstoned sandbox: ", 1)[1].splitlines()[0]
        return f"nothing: the sandbox could not be applied ({reason})"
    roots = [os.path.realpath(p) for p in inside]
    found: list[str] = []
    lines = text.splitlines()
    for number, line in enumerate(lines):
        what = _line(line[:2000], lines[max(0, number - 6):number], roots, cwd)
        if what:
            found.append(what)
    if found:  # the last, or an earlier one of its kind that says more
        last = found[-1]
        kind = re.split(r": | \(", last)[0]
        return max((f for f in found if f.startswith(kind)), key=len) if kind == last else last
    if exit_code in _EXIT_SIGSYS or "Bad system call" in text:
        return "a system call of another ABI (32-bit or x32), which the sandbox kills"
    return None


def _line(line: str, before: list[str], roots: list[str], cwd: Path | None) -> str | None:
    if "io_uring" in line and re.search(r"function not implemented|ENOSYS", line, re.IGNORECASE):
        return "io_uring"
    if _NETWORK.search(line):
        return "a network connection"
    if _EPERM.search(line):
        if _SIGNAL.search(line) or any(_SIGNAL.search(b) for b in before):
            pid = _PID.search(line)
            number = next((g for g in pid.groups() if g), None) if pid else None
            return ("a signal to a process outside the sandbox"
                    + (f" (pid {number})" if number else ""))  # fmt: skip
        if os.geteuid() == 0:  # root's capabilities are gone in the sandbox
            return "an operation that needs a capability (the sandbox drops them all)"
        return None
    xdev = bool(_XDEV.search(line))
    if not xdev and not _DENIED.search(line):
        return None
    paths = _paths(line)
    if any(p.startswith(("/dev/tcp/", "/dev/udp/")) for p in paths):
        return "a network connection"
    for path in paths:  # the first that names something outside
        shown = path
        if not path.startswith("/"):
            if cwd is None:
                continue
            path = os.path.realpath(os.path.join(cwd, path))
        what = _classify(path, line, roots, xdev=xdev)
        if what:
            return what if shown == path else what.replace(f": {path}", f": {shown} → {path}")
    if paths:
        return None
    if xdev:
        return "a link or rename across the workspace boundary"
    context = [line, *before]
    if any(_SOCKET.search(b) for b in context):
        unix = next((p for b in context for p in _paths(b) if p.endswith(".sock")), None)
        if unix or any("AF_UNIX" in b for b in context):
            return "a Unix socket connection" + (f": {unix}" if unix else "")
        return "a network connection"
    return None


def _paths(line: str) -> list[str]:
    """The paths a denial names, likeliest first: those after the error words in order
    (Python, Node), then those before it from the last (coreutils, bash)."""
    marker = re.search(r"permission denied|cross-device link|EACCES|EXDEV|os error", line,
                       re.IGNORECASE)  # fmt: skip
    cut = marker.start() if marker else len(line)
    after: list[str] = []
    before: list[str] = []
    for match in _PATH.finditer(line):
        path = next(g for g in match.groups() if g)
        if path.startswith(("/dev/fd/", "/proc/self/fd/")) or "://" in path or path in _CALLS:
            continue  # bash names its script (/dev/fd/N) before the error; "socket: ..."
        if path.startswith("~/"):
            path = os.path.join(str(Path.home()), path[2:])
        (after if match.start() >= cut else before).append(path)
    return [*after, *reversed(before)]


def _classify(path: str, line: str, roots: list[str], *, xdev: bool) -> str | None:
    real = os.path.realpath(path)
    if _PROC_PROCESS.match(path):
        return f"another process's environment or memory: {path}"
    if places.is_credential(real) or places.is_credential(path):
        return f"a read of a credential store: {path}"
    if any(places.within(real, root) for root in roots) and not xdev:
        return None
    if xdev:
        return f"a link or rename across the workspace boundary: {path}"
    home = str(Path.home())
    readable = any(places.within(real, r) for r in _READABLE)
    if _WRITE.search(line) or readable:
        return f"a write outside the workspace: {path}"
    if home not in ("", "/") and places.within(real, home):
        return f"a read in the home directory outside the workspace and toolchains: {path}"
    if _READ.search(line):
        return f"a read outside the workspace: {path}"
    return f"an access outside the workspace: {path}"
