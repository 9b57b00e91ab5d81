"""Where the words of a command point: the workspace, a credential store, a system directory.

A word may be a glob or hold a piece only known at run time (see ``shell.Word``);
``could_be_under`` then asks whether any path it may name lies under a root,
so ``~/.s*/id_rsa`` and ``/proc/*/envir''on`` are caught like their plain spellings.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import glob
import os
import posixpath
from dataclasses import dataclass

from turnstoned.places import credential_roots, is_credential, within
from turnstoned.shell.words import Word

MAX_GLOB_MATCHES = 2000  # matches of one glob checked for links that lead out
# Directories of the system: deleting or writing them breaks the machine.
SYSTEM_DIRS = ("/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/boot",
               "/sys", "/proc", "/dev", "/var/lib", "/var/spool", "/System", "/Library",
               "/private/etc")  # fmt: skip
# Whole trees whose recursive removal is a disaster even when nothing is a "system" file.
# (/root is a home directory, root's: a workspace may live there, as in containers.)
ROOT_TREES = ("/", "/home", "/Users", "/var", "/opt", "/srv", "/mnt", "/media", "/Applications",
              "/root")
HARMLESS_DEVICES = ("/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero",
                    "/dev/random", "/dev/urandom")
# Files that decide what runs later: shell start-up, scheduled jobs, repository hooks, and
# the agent's own per-project configuration.
HOME_STARTUP = (".bashrc", ".bash_profile", ".bash_login", ".profile", ".zshrc", ".zshenv",
                ".zprofile", ".zlogin", ".config/fish", ".config/autostart", ".config/systemd",
                ".xinitrc", ".xprofile", ".local/bin", ".ssh/rc")
WORKSPACE_HOOKS = (".git/hooks", ".git/config", ".envrc", ".turnstone", ".mcp.json",
                   ".vscode/tasks.json", ".vscode/settings.json", ".husky")
SYSTEM_STARTUP = ("/etc/cron.d", "/etc/crontab", "/etc/profile", "/etc/profile.d",
                  "/etc/systemd", "/etc/rc.local", "/var/spool/cron")


@dataclass(frozen=True, slots=True)
class Where:
    """Where a call's paths are judged from."""

    cwd: str | None  # the directory relative paths resolve against (None: unknown)
    workspace: str  # real path
    home: str
    credentials: tuple[str, ...] = ()  # credential stores (empty: looked up on each use)

    def at(self, cwd: str | None) -> Where:
        """The same place judged from another directory (after a ``cd``)."""
        return dataclasses.replace(self, cwd=cwd)

    def credential_roots(self) -> tuple[str, ...]:
        return self.credentials or credential_roots()


def literal_prefix(pattern: str) -> str:
    """The fixed start of an fnmatch pattern (up to its first wildcard)."""
    out = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "[" and i + 2 < len(pattern) and pattern[i + 2] == "]":
            out.append(pattern[i + 1])
            i += 3
        elif ch in "*?[":
            break
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def absolute(word: Word, where: Where) -> Word | None:
    """The word as an absolute path (None when relative to an unknown directory)."""
    unknown_start = word.dynamic and word.pattern.startswith("*")
    if word.text.startswith("/") and not unknown_start:
        return word
    if where.cwd is None or unknown_start:
        return None
    text = posixpath.join(where.cwd, word.text)
    return Word(text=text, pattern=posixpath.join(_escape(where.cwd), word.pattern),
                dynamic=word.dynamic, glob=word.glob)


def _escape(text: str) -> str:
    return "".join(f"[{c}]" if c in "*?[]" else c for c in text)


def real(text: str) -> str:
    """The real path (symlinks resolved) of an absolute path."""
    return os.path.realpath(text)


def exact(word: Word) -> bool:
    return not word.glob and not word.dynamic


def shown(word: Word) -> str:
    """The word as a verdict's reason shows it."""
    if unknown(word):
        return "a path only known when it runs"
    return word.text if exact(word) else word.pattern


def unknown(word: Word) -> bool:
    """Nothing of the word is known before it runs (``"$F"``): no rule can judge it."""
    return word.dynamic and word.pattern.strip("*") == ""


def literal_suffix(pattern: str) -> str:
    """The fixed end of an fnmatch pattern (after its last wildcard)."""
    cut = 0
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "[" and i + 2 < len(pattern) and pattern[i + 2] == "]":
            i += 3
        elif ch in "*?":
            cut = i + 1
            i += 1
        elif ch == "[":
            close = pattern.find("]", i + 1)
            cut = i = (close + 1) if close > 0 else i + 1
        else:
            i += 1
    return literal_prefix(pattern[cut:])


def could_be_under(word: Word, root: str) -> bool:
    """True when the (absolute) word may name ``root`` or a path below it."""
    root = root.rstrip("/") or "/"
    if exact(word):
        return within(real(word.text), root) or within(posixpath.normpath(word.text), root)
    if unknown(word):
        return False
    prefix = literal_prefix(word.pattern)
    base = root if root == "/" else root + "/"
    if prefix == root or prefix.startswith(base):
        return True
    if not base.startswith(prefix):
        return False
    tail = literal_suffix(word.pattern)
    probes = (root, base, root + tail, base + tail.lstrip("/"), base + "x" + tail)
    return any(fnmatch.fnmatchcase(probe, word.pattern) for probe in probes)


def under_any(word: Word, roots: tuple[str, ...] | list[str]) -> bool:
    """``could_be_under`` for several roots (an exact word is resolved once)."""
    if exact(word):
        candidates = (real(word.text), posixpath.normpath(word.text))
        return any(within(c, root.rstrip("/") or "/") for c in candidates for root in roots)
    return any(could_be_under(word, root) for root in roots)


def names_exactly(word: Word, path: str) -> bool:
    """True when the (absolute) word may be exactly ``path`` (or ``path/``)."""
    if exact(word):
        return posixpath.normpath(word.text) == path or real(word.text) == path
    return any(fnmatch.fnmatchcase(p, word.pattern) for p in (path, path.rstrip("/") + "/"))


def is_credential_word(word: Word, where: Where) -> bool:
    """An absolute word that may name a credential store or a process's environment."""
    roots = where.credential_roots()
    if exact(word):
        return is_credential(real(word.text), roots) or is_credential(
            posixpath.normpath(word.text), roots)
    if unknown(word):
        return False
    return proc_environ(word) or under_any(word, roots)


def proc_environ(word: Word) -> bool:
    """A word that may name ``/proc/<pid>/environ`` (however it is spelled)."""
    probes = ("/proc/self/environ", "/proc/1/environ", "/proc/self/task/1/environ",
              "/proc/thread-self/environ")
    if unknown(word):
        return False
    if exact(word):
        text = posixpath.normpath(word.text)
        return text.startswith("/proc/") and (text.endswith("/environ") or
                                              real(text).endswith("/environ"))
    return any(fnmatch.fnmatchcase(p, word.pattern) for p in probes)


def inside(word: Word, where: Where) -> bool:
    """True when every path the (absolute) word may name is inside the workspace."""
    if exact(word):
        return within(real(word.text), where.workspace)
    if unknown(word):
        return False
    prefix = literal_prefix(word.pattern)
    head = posixpath.dirname(prefix) if not prefix.endswith("/") else prefix.rstrip("/")
    if not within(real(head or "/"), where.workspace) or ".." in word.pattern:
        return False
    # What the glob matches now: a symbolic link among the matches may lead out.
    return word.dynamic or _matches_inside(word.pattern, where.workspace)


def _matches_inside(pattern: str, workspace: str) -> bool:
    """Every path ``pattern`` matches now is inside the workspace (too many to check: no)."""
    for n, match in enumerate(glob.iglob(pattern)):
        if n >= MAX_GLOB_MATCHES or not within(real(match), workspace):
            return False
    return True


def is_system(word: Word) -> bool:
    if exact(word) and (real(word.text) in HARMLESS_DEVICES or
                        real(word.text).startswith("/dev/fd/")):
        return False
    return under_any(word, SYSTEM_DIRS)


def is_rootish(word: Word, home: str) -> bool:
    """The word may name the filesystem root, the home directory or a whole system tree."""
    if unknown(word):
        return False  # judged as unknown, not as the root
    roots = (*ROOT_TREES, *SYSTEM_DIRS, home, "/usr/local", "/var/log")
    return any(names_exactly(word, root) for root in roots)


def is_startup(word: Word, where: Where) -> bool:
    """The word may name a file that decides what runs later (see the module constants)."""
    roots = [posixpath.join(where.home, name) for name in HOME_STARTUP]
    roots += [posixpath.join(where.workspace, name) for name in WORKSPACE_HOOKS]
    roots += list(SYSTEM_STARTUP)
    return under_any(word, roots)
