"""What a command runs besides itself: wrapped programs and text run as code.

``sudo rm x`` runs ``rm x``; ``bash -c 'rm x'``, ``eval``, ``su -c``, ``watch``
and ``ssh host cmd`` run text; ``find -exec`` and ``xargs`` run a command with
arguments only known at run time; a shell fed a here-document runs it. Each of
these is read as commands of its own (one level deeper), so a rule that looks
for ``rm`` finds it wherever it hides.
"""

from __future__ import annotations

import dataclasses
import posixpath
import re
from typing import Protocol

from turnstoned.shell.words import SHELLS, Command, Word


class Reader(Protocol):
    """The reader a wrapped command's text is read back into (``shell.read.Reader``)."""

    def read(self, text: str, vars_: dict[str, list[str]], cwd: str | None,
             depth: int) -> list[Command]: ...

    def record(self, command: Command) -> None: ...

# Programs that run the command named after them (with their own options first).
_WRAPPERS = frozenset({"sudo", "doas", "env", "nice", "nohup", "time", "command", "builtin",
                       "exec", "stdbuf", "ionice", "setsid", "timeout", "unbuffer", "chrt",
                       "taskset", "flock", "xargs", "pkexec", "caffeinate", "systemd-run"})
# Options of wrappers that take a value (their next word is not the command).
_WRAPPER_VALUES = {
    "sudo": {"-u", "-g", "-C", "-h", "-p", "-r", "-t", "-U", "-D", "-T"},
    "doas": {"-u", "-C"}, "env": {"-u", "-C", "-S"}, "nice": {"-n"}, "ionice": {"-c", "-n", "-p"},
    "stdbuf": {"-i", "-o", "-e"}, "timeout": {"-s", "-k"}, "chrt": {"-p"}, "taskset": {"-p"},
    "xargs": {"-I", "-i", "-n", "-P", "-L", "-l", "-s", "-d", "-E", "-a"},
    "systemd-run": {"-p", "-u", "-E"},
}  # fmt: skip
_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_ENV_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=")
_DURATION = re.compile(r"\d+(?:\.\d+)?[smhd]?")
_ARG_UNKNOWN = Word(text="", pattern="*", dynamic=True, glob=False)


def unwrap(reader: Reader, command: Command, vars_: dict[str, list[str]],
           depth: int) -> list[Command]:
    """The command as it runs (wrappers stripped) first, then what it runs in turn."""
    command = _strip_wrappers(command)
    reader.record(command)
    made = [command]
    nested = depth + 1
    program, args = command.program, command.args
    texts = [w.text for w in args]
    if program in SHELLS or program in ("su", "runuser"):
        script = _c_text(args)
        if script is not None:
            made += reader.read(script, dict(vars_), command.cwd, nested)
        elif command.stdin_text and not _operands(args):
            made += reader.read(command.stdin_text, dict(vars_), command.cwd, nested)
    elif program in ("eval", "watch", "trap") and texts:
        body = texts[:-1] if program == "trap" else _after_options(args, {"-n", "-d"})
        made += reader.read(" ".join(body), dict(vars_), command.cwd, nested)
    elif program == "alias":
        for text in texts:
            made += reader.read(text.partition("=")[2], dict(vars_), command.cwd, nested)
    elif program == "ssh":
        remote = _ssh_command(args)
        if remote:
            made += reader.read(" ".join(remote), dict(vars_), None, nested)
    elif program == "find":
        for words in _find_exec(args):
            inner = dataclasses.replace(command, words=words, wrappers=[], redirects=[],
                                        upstream=[], depth=nested)
            made += unwrap(reader, inner, vars_, nested)
    return made


def _strip_wrappers(command: Command) -> Command:
    """``sudo -u x env A=1 nice -n 5 rm y`` is ``rm y`` run by sudo, env and nice."""
    words, wrappers, env = command.words, list(command.wrappers), list(command.env)
    while words and not words[0].dynamic:
        name = posixpath.basename(words[0].text)
        if name not in _WRAPPERS or (name == "command" and _looks_up(words[1:])):
            break
        rest = _skip_options(name, words[1:])
        if name == "env":  # `env A=1 cmd`: cmd runs with A set
            env += [m.group(1) for w in words[1:len(words) - len(rest)]
                    if (m := _ENV_ASSIGNMENT.match(w.text))]
        if name == "xargs" and rest:
            rest = [*rest, _ARG_UNKNOWN]  # xargs adds arguments read from its input
        if not rest:
            break  # `env` alone, `sudo -i`: the wrapper is the program
        wrappers.append(name)
        words = rest
    if words is command.words:
        return command
    return dataclasses.replace(command, words=words, wrappers=wrappers, env=env)


def _skip_options(name: str, words: list[Word]) -> list[Word]:
    """The words after a wrapper's own options (and, for env, its assignments)."""
    takes_value = _WRAPPER_VALUES.get(name, set())
    i = 0
    while i < len(words):
        text = words[i].text
        if text == "--":
            return words[i + 1:]
        if name == "env" and text in ("-S", "--split-string") and i + 1 < len(words):
            # env -S 'prog args': the string is split into the command and its arguments
            if words[i + 1].dynamic:
                return [_ARG_UNKNOWN, *words[i + 2:]]
            split = [Word(text=w, pattern=w, dynamic=False, glob=False)
                     for w in words[i + 1].text.split()]
            return split + words[i + 2:]
        if text in takes_value:
            i += 2
        elif (text.startswith("-") and len(text) > 1) or (
                name == "env" and re.match(r"[A-Za-z_][A-Za-z0-9_]*=", text)):
            i += 1  # an option, or an assignment env makes
        elif name in ("timeout", "nice") and _DURATION.fullmatch(text) and i == 0:
            i += 1  # timeout's duration (nice's old -N form is an option above)
        elif name == "flock" and i == 0:
            i += 1  # the lock file
        else:
            break
    return words[i:]


def _looks_up(args: list[Word]) -> bool:
    """``command -v x`` only says where ``x`` is."""
    return bool(args) and args[0].text in ("-v", "-V")


def _operands(args: list[Word]) -> list[Word]:
    return [w for w in args if not w.text.startswith("-") or w.dynamic]


def _c_text(args: list[Word]) -> str | None:
    """The text of ``sh -c TEXT`` / ``bash -lc TEXT`` / ``su user -c TEXT``."""
    for i, word in enumerate(args):
        text = word.text
        if text == "--command" or (re.fullmatch(r"-[a-zA-Z]*c[a-zA-Z]*", text)
                                   and not text.startswith("--")):
            return args[i + 1].text if i + 1 < len(args) else ""
        if text.startswith("--command="):
            return text.partition("=")[2]
    return None


def _after_options(args: list[Word], takes_value: set[str]) -> list[str]:
    i = 0
    while i < len(args) and args[i].text.startswith("-"):
        i += 2 if args[i].text in takes_value else 1
    return [w.text for w in args[i:]]


_SSH_VALUES = frozenset({"-b", "-c", "-D", "-E", "-e", "-F", "-I", "-i", "-J", "-L", "-l", "-m",
                         "-O", "-o", "-p", "-Q", "-R", "-S", "-W", "-w"})


def _ssh_command(args: list[Word]) -> list[str]:
    """The remote command of ``ssh [options] host command...``."""
    i = 0
    while i < len(args) and args[i].text.startswith("-"):
        i += 2 if args[i].text in _SSH_VALUES else 1
    return [w.text for w in args[i + 1:]]


def _find_exec(args: list[Word]) -> list[list[Word]]:
    """The commands of ``find ... -exec cmd {} ;`` (``{}`` is a path only known then)."""
    found = []
    i = 0
    while i < len(args):
        if args[i].text in _FIND_EXEC:
            words: list[Word] = []
            i += 1
            while i < len(args) and args[i].text not in (";", "+"):
                words.append(_ARG_UNKNOWN if args[i].text == "{}" else args[i])
                i += 1
            if words:
                found.append(words)
        i += 1
    return found
