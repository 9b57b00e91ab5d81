"""Commands that only read and print: the ``read-only`` class of the intent rules.

A program is read-only here when, with the options it is given, it writes no
file, runs no other program and changes no state: ``ls``, ``cat``, ``grep``,
``find`` without ``-exec``/``-delete``, ``git status``/``log``/``diff``, and
so on. Redirections are judged by the caller (a ``>`` makes any command a writer).
"""

from __future__ import annotations

import os
import posixpath
import shutil

from turnstoned.places import within
from turnstoned.shell import where as ip
from turnstoned.shell.access import absolutes, plain_word, read_words, write_targets
from turnstoned.shell.options import unaccounted
from turnstoned.shell.where import Where
from turnstoned.shell.words import Command

_ANY_OPTIONS = frozenset({
    "ls", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "ag", "tree", "pwd", "echo",
    "printf", "stat", "file", "du", "df", "which", "whereis", "type", "basename", "dirname",
    "realpath", "readlink", "diff", "cmp", "comm", "cut", "tr", "nl", "od", "hexdump", "md5sum",
    "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "b2sum", "cksum", "date",
    "whoami", "id", "uname", "true", "false", "test", "[", "[[", "jq", "column", "seq", "sleep",
    "tac", "rev", "fold", "paste", "join", "expand", "unexpand", "strings", "cd", "pushd", "popd",
    "wait", "nproc", "locale", "groups", "tty", "look", "fmt", "numfmt",
    "lsof", "free", "uptime", "arch",
})  # fmt: skip
# Programs whose operands are not paths (a word like "/etc" is text to them).
_NOT_PATHS = frozenset({"echo", "printf", "true", "false", "date", "whoami", "id", "uname", "seq",
                        "sleep", "test", "[", "[[", "basename", "dirname", "which", "whereis",
                        "type", "tr", "pwd", "wait", "nproc", "locale", "groups",
                        "tty", "numfmt", "free", "uptime", "arch"})
_FIND_ACTIONS = ("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0",
                 "-fprintf", "-fls")
_GIT_READ = frozenset({"status", "log", "diff", "show", "rev-parse", "ls-files", "ls-tree",
                       "blame", "describe", "shortlog", "cat-file", "whatchanged",
                       "count-objects", "merge-base", "name-rev", "rev-list", "for-each-ref",
                       "show-ref", "diff-tree", "diff-index", "diff-files", "grep", "annotate",
                       "show-branch", "version", "help"})
_GIT_BRANCH_LIST = frozenset({"-a", "-r", "-v", "-vv", "-l", "--list", "--all", "--remotes",
                              "--show-current", "--verbose", "--no-color", "--color"})


_SYSTEM_BINS = frozenset({"/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin",
                          "/usr/local/sbin"})
# Recursive readers and the options with which they follow symbolic links: (short option
# letters, long options).
_FOLLOWING = {"grep": ("R", ("--dereference-recursive",)),
              "egrep": ("R", ("--dereference-recursive",)),
              "fgrep": ("R", ("--dereference-recursive",)),
              "rg": ("L", ("--follow",)), "ag": ("f", ("--follow",)),
              "tree": ("l", ()), "du": ("L", ("--dereference",))}


def non_path_program(program: str) -> bool:
    return program in _NOT_PATHS


def is_read_only(command: Command) -> bool:
    """True when the command writes nothing and runs nothing but itself: a known program
    (by its name, or from a system directory), with words that say all it does
    (``options.unaccounted``)."""
    program = command.program
    if not program or any(w.dynamic for w in command.words) or command.wrappers:
        return False
    first = command.words[0].text
    if "/" in first and posixpath.dirname(first) not in _SYSTEM_BINS:
        return False  # `./ls` runs whatever file that is
    if unaccounted(command) is not None:
        return False
    texts = [w.text for w in command.args]
    if program in _ANY_OPTIONS:
        return True
    checks = {"find": _find, "rg": _rg, "sort": _sort, "uniq": _one_operand, "xxd": _xxd,
              "git": _git, "command": _command_lookup}
    check = checks.get(program)
    return check is not None and check(texts)


def _shadowed(command: Command, where: Where) -> bool:
    """The program found on PATH is a file inside the workspace (a PATH that lists the
    project's own directories first), not the system's."""
    if "/" in command.words[0].text:
        return False
    found = shutil.which(command.program)
    return found is not None and within(os.path.realpath(found), where.workspace)


def _follows_links(command: Command) -> str:
    """The option with which a recursive reader follows every symbolic link it meets
    (``grep -R``, ``rg -L``): a link in the workspace may lead anywhere."""
    flags = _FOLLOWING.get(command.program)
    if flags is None:
        return ""
    for word in command.args:
        text = word.text
        if text in flags[1] or (not text.startswith("--") and text.startswith("-")
                                and any(c in text[1:] for c in flags[0])):
            return f"{command.program} {text}"
    return ""


def _find(texts: list[str]) -> bool:
    return not any(t in _FIND_ACTIONS for t in texts)


def _rg(texts: list[str]) -> bool:
    return not any(t == "--pre" or t.startswith("--pre=") for t in texts)


def _sort(texts: list[str]) -> bool:
    return not any(t.startswith(("-o", "--output", "--compress-program")) for t in texts)


def _one_operand(texts: list[str]) -> bool:
    return len([t for t in texts if not t.startswith("-")]) <= 1


def _xxd(texts: list[str]) -> bool:
    return "-r" not in texts and "-revert" not in texts and _one_operand(texts)


def _command_lookup(texts: list[str]) -> bool:
    return bool(texts) and texts[0] in ("-v", "-V")


def _git(texts: list[str]) -> bool:
    i = 0
    while i < len(texts) and texts[i].startswith("-"):
        if texts[i] in ("-c", "--exec-path") or texts[i].startswith(("--exec-path=",
                                                                     "--config-env")):
            return False  # configuration given here can run programs
        i += 2 if texts[i] in ("-C", "--git-dir", "--work-tree") else 1
    if i >= len(texts):
        return False
    sub, rest = texts[i], texts[i + 1:]
    if any(t.startswith(("--output", "--ext-diff", "-O", "--open-files-in-pager")) for t in rest):
        return False
    if sub in _GIT_READ:
        return True
    if sub == "branch":
        return all(t in _GIT_BRANCH_LIST or t.startswith(("--sort", "--contains", "--merged",
                                                          "--no-merged", "--format"))
                   for t in rest)
    if sub == "tag":
        return not rest or rest[0] in ("-l", "--list", "-n")
    if sub == "remote":
        return not rest or rest in (["-v"], ["--verbose"]) or rest[0] == "get-url"
    if sub == "stash":
        return bool(rest) and rest[0] in ("list", "show")
    if sub in ("reflog", "worktree", "submodule"):
        return not rest or rest[0] in ("show", "list", "status")
    return False


def command_read_only(command: Command, where: Where) -> tuple[bool, str]:
    """Whether the command only reads, and if so what it reads outside the workspace ('')."""
    if not is_read_only(command) or write_targets(command) or _shadowed(command, where):
        return False, ""
    here = where.at(command.cwd)
    if command.cwd is None or not ip.inside(plain_word(command.cwd), here):
        return True, "runs outside the workspace"
    if non_path_program(command.program):
        return True, ""
    follows = _follows_links(command)
    if follows:
        return True, f"follows symbolic links wherever they lead ({follows})"
    for word in absolutes(read_words(command), here):
        if not ip.inside(word, here):
            return True, f"reads {ip.shown(word)} outside the workspace"
    return True, ""
