"""Command normalisation and the dangerous-command blocklist for bash (and watch).

The blocklist is a soft guardrail that catches obvious accidents before anyone
is asked to approve them; it is trivially bypassable and approval stays the
real boundary. Compared with a plain substring test it reads the command as
shell words so that, for example, ``rm -rf /tmp/x`` and ``echo reboot`` pass
while ``rm -fr /``, ``rm -r -f /`` and ``sudo reboot`` are caught. Quoted
strings are scanned again as commands (``bash -c "rm -rf /"``), which keeps
``echo "rm -rf /"`` blocked: a false positive we accept.
"""

from __future__ import annotations

import posixpath
import re
import shlex

_TRANSLATION = str.maketrans(
    {"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-"}
)

_SEPARATORS = frozenset({";", ";;", "&", "&&", "|", "||", "|&", "(", ")"})
_POWER_WORDS = frozenset({"shutdown", "reboot", "halt", "poweroff"})
_SYSTEMCTL_POWER = frozenset({"reboot", "poweroff", "halt"})
# Programs that run the command named after them (with their own options first).
_WRAPPERS = frozenset(
    {"sudo", "doas", "exec", "nohup", "command", "builtin", "env", "nice", "time",
     "timeout", "stdbuf", "ionice", "xargs", "setsid", "eval"}
)  # fmt: skip
_RUNS_TEXT = frozenset({"eval", "ssh", "su", "watch"})
_SUDO_ARG_FLAGS = frozenset({"-u", "-g", "-C", "-h", "-p", "-r", "-t", "-U", "-D"})
_DISKS = r"(?:sd|nvme|vd|xvd|hd|dm-|md|loop|disk/)"

_MKFS = re.compile(r"(?<![\w.-])(?:mkfs(?:\.\w+)?|mke2fs)(?![\w-])")
_DD_TARGET = re.compile(r"\bof=/dev/" + _DISKS)
_REDIRECT_TARGET = re.compile(r">\s*/dev/" + _DISKS)
_FORK_BOMB = re.compile(r"(\w+|:)\(\)\{\1\|\1&\};\1")
_PROC_ENVIRON = re.compile(r"/proc/[^/\s]+/environ")
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
    return _scan_words(text, 0) or _scan_text(text)


def _scan_text(text: str) -> str | None:
    """Checks that work on the raw text rather than on shell words."""
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


def _scan_words(text: str, depth: int, power: bool = True) -> str | None:
    """Checks on shell words, segment by segment; quoted strings are re-scanned.

    A re-scanned string is checked for power commands only when it is clearly
    run as a command (``sh -c '...'``, ``eval '...'``, ``ssh host '...'``), so
    that a commit message mentioning "halt" passes.
    """
    for segment in _segments(text):
        hit = _check_segment(segment, power)
        if hit:
            return hit
        if depth >= _MAX_DEPTH:
            continue
        runs_text = posixpath.basename(segment[0]) in _RUNS_TEXT
        for index, word in enumerate(segment):
            as_command = runs_text or (index > 0 and segment[index - 1] == "-c")
            if as_command or any(ch.isspace() or ch in ";&|" for ch in word):
                hit = _scan_words(word, depth + 1, as_command)
                if hit:
                    return hit
    return None


def _segments(text: str) -> list[list[str]]:
    """The simple commands of ``text`` as lists of words (operators split them)."""
    # Newlines and backticks start new commands; mapping them to ';' only affects
    # this analysis, never the command that runs.
    prepared = text.replace("\n", " ; ").replace("`", " ; ")
    try:
        lexer = shlex.shlex(prepared, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = ""
        words = list(lexer)
    except ValueError:
        words = re.sub(r"[;&|()]", " ; ", prepared).replace('"', " ").replace("'", " ").split()
    segments: list[list[str]] = [[]]
    for word in words:
        if word in _SEPARATORS or (word and set(word) <= set(";&|()")):
            segments.append([])
        elif word.startswith("$") and word.rstrip("$") == "":
            continue  # the '$' of '$(' is split from its parenthesis by the lexer
        else:
            segments[-1].append(word)
    return [s for s in segments if s]


def _check_segment(words: list[str], power: bool) -> str | None:
    for index, word in enumerate(words):
        name = posixpath.basename(word)
        rest = words[index + 1 :]
        if name == "rm":
            hit = _rm_hit(rest)
        elif name in ("chmod", "chown"):
            hit = _recursive_root_hit(rest, "chmod -R 777 /" if name == "chmod" else "chown -R ")
        elif name == "mv":
            hit = "mv / " if any(_is_root(w) for w in _operands(rest)[:-1]) else None
        else:
            hit = None
        if hit:
            return hit
    return _power_hit(words) if power else None


def _operands(words: list[str]) -> list[str]:
    """The non-option words (everything after ``--`` counts as an operand)."""
    result: list[str] = []
    options_done = False
    for word in words:
        if options_done or not word.startswith("-") or word == "-":
            result.append(word)
        elif word == "--":
            options_done = True
    return result


def _rm_hit(words: list[str]) -> str | None:
    flags = [w for w in words if w.startswith("-") and w != "--"]
    recursive = any(
        w == "--recursive" or (not w.startswith("--") and ("r" in w or "R" in w)) for w in flags
    )
    if not recursive:
        return None
    for operand in _operands(words):
        if _is_root(operand):
            return "rm -rf /*" if operand.endswith("*") else "rm -rf /"
    return None


def _recursive_root_hit(words: list[str], pattern: str) -> str | None:
    flags = [w for w in words if w.startswith("-") and w != "--"]
    recursive = any(w == "--recursive" or (not w.startswith("--") and "R" in w) for w in flags)
    if recursive and any(_is_root(w) for w in _operands(words)):
        return pattern
    return None


def _is_root(word: str) -> bool:
    """True when the word names the filesystem root or the home directory itself."""
    target = word.strip()
    target = target.removesuffix("*")
    for home in ("~", "$HOME", "${HOME}"):
        if target == home or target.startswith(home + "/"):
            target = "/" + target[len(home) :]
            break
    if not target.startswith("/"):
        return False
    return posixpath.normpath(target) in ("/", "//")


def _power_hit(words: list[str]) -> str | None:
    """shutdown/reboot/halt/poweroff in command position (after wrappers like sudo)."""
    index = _command_index(words)
    if index is None:
        return None
    name = posixpath.basename(words[index])
    if name in _POWER_WORDS:
        return name
    if name == "systemctl":
        for word in words[index + 1 :]:
            if word in _SYSTEMCTL_POWER:
                return word
    return None


def _command_index(words: list[str]) -> int | None:
    """The index of the word that names the program this simple command runs."""
    index = 0
    while index < len(words):
        word = words[index]
        if re.fullmatch(r"[A-Za-z_]\w*=.*", word, flags=re.DOTALL):
            index += 1
        elif posixpath.basename(word) in _WRAPPERS:
            index = _skip_wrapper_options(words, index + 1, sudo=word.endswith("sudo"))
        else:
            return index
    return None


def _skip_wrapper_options(words: list[str], index: int, *, sudo: bool) -> int:
    while index < len(words):
        word = words[index]
        if sudo and word in _SUDO_ARG_FLAGS:
            index += 2
        elif word.startswith("-") or re.fullmatch(r"\d+(?:\.\d+)?[smhd]?", word):
            index += 1
        else:
            break
    return index
