"""The dangerous-command blocklist for bash (and watch), read with the one bash reader.

The blocklist is a soft guardrail that catches obvious accidents before anyone
is asked to approve them; it is bypassable and approval stays the real
boundary. It judges the commands ``read.read_script`` finds, the same ones the
intent rules rate, so ``sudo``, ``pkexec``, ``bash -c``, ``eval``, ``$(...)``
and here-documents fed to a shell hide nothing from it, while ``rm -rf
/tmp/x`` and ``echo reboot`` pass. Words holding spaces or operators are read
again as commands (``python -c "os.system('rm -rf /')"``), which keeps ``echo
"rm -rf /"`` blocked: a false positive we accept; a power word (``reboot``) only
counts where it is run. A few checks work on the raw text (``mkfs``, ``dd`` to a
disk, fork bombs, ``/proc/*/environ``), so they hold even where the text cannot
be read as shell.
"""

from __future__ import annotations

import os
import posixpath
import re

from turnstoned.shell.read import read_script
from turnstoned.shell.words import Command, Word

_TRANSLATION = str.maketrans(
    {"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-"}
)
_POWER_WORDS = frozenset({"shutdown", "reboot", "halt", "poweroff"})
_SYSTEMCTL_POWER = frozenset({"reboot", "poweroff", "halt"})
_DISKS = r"(?:sd|nvme|vd|xvd|hd|dm-|md|loop|disk/)"

_MKFS = re.compile(r"(?<![\w.-])(?:mkfs(?:\.\w+)?|mke2fs)(?![\w-])")
_DD_TARGET = re.compile(r"\bof=/dev/" + _DISKS)
_REDIRECT_TARGET = re.compile(r">\s*/dev/" + _DISKS)
_FORK_BOMB = re.compile(r"(\w+|:)\(\)\{\1\|\1&\};\1")
_PROC_ENVIRON = re.compile(r"/proc/[^/\s]+/environ")
_OPERATORS = re.compile(r"[;&|()\n`]")
_MAX_DEPTH = 3


def normalize_command(command: str) -> str:
    """Curly quotes to straight quotes, en and em dashes to hyphens."""
    return command.translate(_TRANSLATION)


def blocked_message(command: str) -> str | None:
    """The error text for a command on the blocklist, or None when it may proceed."""
    pattern = blocked_pattern(command)
    if pattern is None:
        return None
    return f"Blocked: command matches dangerous pattern '{pattern}'"


def blocked_pattern(command: str) -> str | None:
    """The dangerous pattern ``command`` matches (first hit wins), or None."""
    text = normalize_command(command).strip()
    home = os.path.expanduser("~")
    return _scan(text, home, 0, run=True) or _scan_text(text)


def _scan_text(text: str) -> str | None:
    """Checks that work on the raw text rather than on the commands read from it."""
    flat = " ".join(text.split())
    if _MKFS.search(flat):
        return "mkfs"
    match = _DD_TARGET.search(flat)
    if match:
        return match.group(0)
    if _FORK_BOMB.search("".join(text.split())):
        return ":(){ :|:& };:"
    match = _REDIRECT_TARGET.search(flat)
    if match:
        return "> " + match.group(0)[1:].lstrip()
    match = _PROC_ENVIRON.search(flat)
    if match:
        return match.group(0)
    return None


def _commands(text: str, home: str) -> list[Command]:
    """The commands of ``text``; text that is not complete shell (an unclosed quote) is
    read again without its quotes, piece by piece, so a stray quote hides nothing."""
    script = read_script(text, None, home)
    if script.error is None:
        return script.commands
    pieces = _OPERATORS.split(text.replace('"', " ").replace("'", " "))
    return [c for piece in pieces if piece.strip()
            for c in read_script(piece, None, home).commands]


def _scan(text: str, home: str, depth: int, run: bool) -> str | None:
    """The first hit among the commands of ``text`` (``run``: they are known to run, so
    power words count), then among their words read again as commands."""
    commands = _commands(text, home)
    for command in commands:
        hit = _check(command, home) or (_power_hit(command) if run else None)
        if hit:
            return hit
    if depth >= _MAX_DEPTH:
        return None
    for command in commands:
        for word in command.words:
            if not word.dynamic and any(ch.isspace() or ch in ";&|" for ch in word.text):
                hit = _scan(word.text, home, depth + 1, run=False)
                if hit:
                    return hit
    return None


def _check(command: Command, home: str) -> str | None:
    program, args = command.program, command.args
    if program == "rm":
        if _recursive(args, "rR") and (hits := [w for w in _operands(args) if _is_root(w, home)]):
            return "rm -rf /*" if hits[0].text.endswith("*") else "rm -rf /"
    elif program in ("chmod", "chown"):
        if _recursive(args, "R") and any(_is_root(w, home) for w in _operands(args)):
            return "chmod -R 777 /" if program == "chmod" else "chown -R "
    elif program == "mv" and any(_is_root(w, home) for w in _operands(args)[:-1]):
        return "mv / "
    return None


def _recursive(args: list[Word], letters: str) -> bool:
    return any(w.text == "--recursive" or (w.text.startswith("-") and not w.text.startswith("--")
                                           and any(c in w.text for c in letters)) for w in args)


def _operands(args: list[Word]) -> list[Word]:
    """The non-option words (everything after ``--`` counts as an operand)."""
    result: list[Word] = []
    options_done = False
    for word in args:
        if options_done or not word.text.startswith("-") or word.text == "-":
            result.append(word)
        elif word.text == "--":
            options_done = True
    return result


def _is_root(word: Word, home: str) -> bool:
    """True when the word names the filesystem root or the home directory itself (a
    trailing ``*`` included)."""
    if word.dynamic:
        return False
    target = word.text.strip().removesuffix("*")
    if target == home or target.startswith(home.rstrip("/") + "/"):
        target = "/" + target[len(home):]
    return target.startswith("/") and posixpath.normpath(target) in ("/", "//")


def _power_hit(command: Command) -> str | None:
    """shutdown/reboot/halt/poweroff as the program run (wrappers like sudo stripped)."""
    if command.program in _POWER_WORDS:
        return command.program
    if command.program == "systemctl":
        for word in command.args:
            if word.text in _SYSTEMCTL_POWER:
                return word.text
    return None
