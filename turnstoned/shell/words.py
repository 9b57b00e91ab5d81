"""The words and commands the bash reader produces (see ``shell.read``)."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "busybox"})


@dataclass(frozen=True, slots=True)
class Word:
    """One word after expansion."""

    text: str  # its value; unknown pieces are left out
    pattern: str  # as an fnmatch pattern: globs active, unknown pieces are '*'
    dynamic: bool  # part of it is only known when it runs
    glob: bool  # it has active glob characters


@dataclass(slots=True)
class Command:
    """One simple command as it would run."""

    words: list[Word]  # the program first (after wrappers like sudo and env)
    wrappers: list[str] = field(default_factory=list)  # e.g. ["sudo"]
    redirects: list[tuple[str, Word | None]] = field(default_factory=list)  # (op, target)
    upstream: list[str] = field(default_factory=list)  # programs piping into it
    subs: list[str] = field(default_factory=list)  # programs of its $(...) and <(...)
    stdin_text: str | None = None  # a here-document or here-string
    cwd: str | None = None  # where relative paths resolve (None: unknown)
    depth: int = 0
    # Variables its environment gets from the script: assignments before it (`A=1 cmd`),
    # env's (`env A=1 cmd`), and those the script exported or changed earlier.
    env: list[str] = field(default_factory=list)
    function: bool = False  # its program is a function the script defines

    @property
    def program(self) -> str:
        """The program's name ('' when it is only known at run time)."""
        if not self.words or self.words[0].dynamic:
            return ""
        return posixpath.basename(self.words[0].text)

    @property
    def args(self) -> list[Word]:
        return self.words[1:]


@dataclass(slots=True)
class Script:
    """The commands of a script, outer ones and those run from inside them."""

    commands: list[Command] = field(default_factory=list)
    error: str | None = None  # it could not be read completely
    functions: set[str] = field(default_factory=set)  # names the script defines functions for


def redirect_is_fd(op: str, target: Word | None) -> bool:
    """``2>&1``, ``>&-``: a redirection between descriptors, no file."""
    return op in (">&", "<&") and target is not None and (target.text.isdigit()
                                                          or target.text == "-")

