"""Every simple command a bash script would run, as far as its text tells.

``read_script(text, cwd, home)`` returns the commands of ``text`` in order,
including those it runs indirectly: inside ``$(...)``, backquotes and ``<(...)``,
the text of ``bash -c``, ``eval``, ``su -c``, ``watch`` and ``ssh``, the commands
``sudo``, ``env``, ``xargs``, ``find -exec`` and similar wrappers start, and
the script a shell reads from a here-document. Words are expanded with what the
script itself says: variables assigned in it (every value they may hold, so a
branch cannot hide one), ``$(echo ...)`` and ``$(printf ...)`` of literal text,
brace expansion, ``~``. What only the running shell knows (``$1``,
``$(curl ...)``, a variable from the environment) is marked ``dynamic``. ``cd``
moves the directory that relative paths of later commands are resolved
against. This is a reading for judging risk; it never runs anything.
"""

from __future__ import annotations

import functools
import itertools
import os
import posixpath
import re

from turnstoned.shell.lex import (
    COMMA,
    LBRACE,
    RBRACE,
    SPECIAL,
    UNSPECIAL,
    Part,
    Redirect,
    ShellSyntaxError,
    Token,
    body_parts,
    tokenize,
)
from turnstoned.shell.words import SHELLS, Command, Script, Word, redirect_is_fd
from turnstoned.shell.wrappers import unwrap

__all__ = ["SHELLS", "Command", "Script", "ShellSyntaxError", "Word", "read_script",
           "redirect_is_fd"]

MAX_DEPTH = 4
MAX_READINGS = 16  # alternative expansions of one command (variables with several values)
MAX_COMMANDS = 400
_UNKNOWN = "\ue010"  # a piece of a word only known when the command runs
_SPLIT = "\ue011"  # a field boundary from an unquoted expansion
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\+?=")
_KEYWORDS = frozenset({"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!",
                       "{", "}", "esac", "time", "coproc"})


class Reader:
    """Reads scripts into one ``Script`` (nested scripts add their commands to it)."""

    def __init__(self, home: str, out: Script, inherited: frozenset[str] = frozenset()) -> None:
        self.home = home
        self.out = out
        self.inherited = inherited  # variables the commands inherit from the environment
        # Variables the script exported or changed so far: later commands run with them.
        self.exported: list[str] = []
        self.allexport = False  # `set -a`: every assignment is exported

    # -- expansion -----------------------------------------------------------------

    def fold(self, text: str, vars_: dict[str, list[str]], cwd: str | None,
             depth: int) -> list[str]:
        """Read a command substitution (its commands run) and return what it prints,
        when that is literal ``echo``/``printf`` text; else an unknown value."""
        inner = self.read(text, dict(vars_), cwd, depth + 1)
        if len(inner) == 1 and inner[0].program in ("echo", "printf"):
            words = inner[0].args
            if words and not any(w.dynamic for w in words):
                texts = [w.text for w in words]
                if inner[0].program == "echo":
                    while texts and re.fullmatch(r"-[neE]+", texts[0]):
                        texts.pop(0)
                    return [" ".join(texts)]
                return [texts[0].replace("%s", " ".join(texts[1:])).replace("\\n", "\n")]
        return [_UNKNOWN]

    def raw(self, parts: list[Part], vars_: dict[str, list[str]], cwd: str | None,
            depth: int, split: bool = True) -> list[str]:
        """The word's possible values, with markers for active globs, unknown pieces and
        field boundaries."""
        options = [""]
        for index, part in enumerate(parts):
            values = self._part_values(part, index, vars_, cwd, depth)
            if not part.quoted and part.kind != "lit":
                values = [_activate(v, split) for v in values]
            options = [o + v for o, v in itertools.product(options, values)][:MAX_READINGS]
        return options

    def expand(self, parts: list[Part], vars_: dict[str, list[str]], cwd: str | None,
               depth: int, split: bool = True) -> list[list[Word]]:
        """The readings of one word: each a list of fields (splitting and braces apply)."""
        readings = []
        for option in self.raw(parts, vars_, cwd, depth, split):
            if not split:
                readings.append([_word(option)])
                continue
            fields = [f for f in option.split(_SPLIT) if f] if _SPLIT in option else [option]
            readings.append([_word(b) for f in fields for b in _braces(f)])
        return readings

    def _part_values(self, part: Part, index: int, vars_: dict[str, list[str]],
                     cwd: str | None, depth: int) -> list[str]:
        if part.kind == "lit":
            text = part.text
            if not part.quoted and index == 0 and text.startswith("~"):
                text = _tilde(text, self.home)
            return [text]
        if part.kind == "var":
            values = list(vars_.get(part.text, []))
            if not values and part.text == "HOME":
                values = [self.home]  # the environment's, unless the script set it
            if part.default is not None:
                values.append(part.default)
            return values or [_UNKNOWN]
        if part.kind == "sub" and depth < MAX_DEPTH:
            return self.fold(part.text, vars_, cwd, depth)
        if part.kind == "proc" and depth < MAX_DEPTH:
            self.fold(part.text, vars_, cwd, depth)
        return [_UNKNOWN]

    # -- commands ------------------------------------------------------------------

    def read(self, text: str, vars_: dict[str, list[str]], cwd: str | None,
             depth: int) -> list[Command]:
        """The commands of ``text`` (recorded in the script too), in order."""
        if depth > MAX_DEPTH or len(self.out.commands) > MAX_COMMANDS:
            return []
        try:
            tokens = tokenize(text)
        except ShellSyntaxError as exc:
            self.out.error = self.out.error or str(exc)
            return []
        found: list[Command] = []
        upstream: list[str] = []
        current: list[Token] = []
        last = "?"
        tokens.append(Token("op", op=";"))
        for i, token in enumerate(tokens):
            if token.kind != "op":
                current.append(token)
                continue
            if token.op == "(" and len(current) == 1 and i + 1 < len(tokens) \
                    and tokens[i + 1].op == ")":  # `name() { ...; }` defines a function
                self.out.functions.add(_literal(current[0].parts) or "")
                current = []
                continue
            if current:
                made = self._command(current, vars_, cwd, depth, upstream)
                found.extend(made)
                cwd = _next_cwd(made, cwd, self.home, self._cdpath())
                last = made[0].program or "?" if made else "?"
                current = []
            if token.op in ("|", "|&"):
                upstream = [*upstream, last]
            elif token.op not in ("(", ")"):
                upstream = []
        return found

    def _command(self, tokens: list[Token], vars_: dict[str, list[str]], cwd: str | None,
                 depth: int, upstream: list[str]) -> list[Command]:
        words, redirects = _split_redirects(tokens)
        while words and _literal(words[0].parts) in _KEYWORDS:
            words.pop(0)
        head = _literal(words[0].parts) if words else None
        if head == "function" and len(words) > 1:  # `function name { body`: read the body
            self.out.functions.add(_literal(words[1].parts) or "")
            words = words[2:]
            while words and _literal(words[0].parts) in _KEYWORDS:
                words.pop(0)
            head = _literal(words[0].parts) if words else None
        if head in ("for", "select", "case", "function", "in"):
            if head in ("for", "select") and len(words) > 1:
                values = [v.replace(_SPLIT, " ") for t in words[3:]
                          for v in self.raw(t.parts, vars_, cwd, depth, split=False)]
                _assign(vars_, _literal(words[1].parts) or "", values or [_UNKNOWN])
            return []
        assigned = []
        while words and _is_assignment(words[0].parts):
            assigned.append(self._assignment(words.pop(0), vars_, cwd, depth))
        if not words:  # assignments alone change the shell, and what it exports
            self._changed(assigned, exported=False)
            if not redirects:
                return []
        first_inner = len(self.out.commands)
        readings: list[list[Word]] = [[]]
        for token in words:
            options = self.expand(token.parts, vars_, cwd, depth)
            readings = [r + o for r in readings for o in options][:MAX_READINGS]
        made = []
        subs = [c.program or "?" for c in self.out.commands[first_inner:]]
        for reading in readings:
            command = Command(words=reading, upstream=list(upstream), cwd=cwd, depth=depth,
                              subs=subs, env=[*assigned, *self.exported])
            self._redirects(command, redirects, vars_, depth)
            made.extend(unwrap(self, command, vars_, depth))
        for command in made:
            self._exports(command)
        return made

    def _changed(self, names: list[str], exported: bool) -> None:
        """Variables the script set: a change reaches later commands when the variable is
        exported (here, by ``set -a``, or inherited from the environment). ``IFS`` changes
        how every later word is split, which this reading does not follow."""
        for name in names:
            if name == "IFS":
                self.out.error = self.out.error or "the script changes IFS"
            if exported or self.allexport or name in self.inherited or name == "CDPATH":
                self.exported.append(name)

    def _exports(self, command: Command) -> None:
        """``export A=1``, ``declare -x A``, ``set -a``: what later commands inherit."""
        program, texts = command.program, [w.text for w in command.args]
        if program == "set" and any(t == "-a" or t == "allexport" or (
                t.startswith("-") and "a" in t and not t.startswith("--")) for t in texts):
            self.allexport = True
        elif program in ("export", "declare", "typeset", "local", "readonly"):
            exported = program == "export" or any(
                t.startswith("-") and "x" in t for t in texts)
            names = [_ASSIGNMENT.match(t + "=").group(1) for t in texts  # type: ignore[union-attr]
                     if not t.startswith("-") and _ASSIGNMENT.match(t + "=")]
            self._changed(names, exported)

    def _cdpath(self) -> bool:
        """``cd`` may search ``CDPATH``: a relative target's directory is then unknown."""
        return "CDPATH" in self.inherited or "CDPATH" in self.exported

    def _redirects(self, command: Command, redirects: list[Redirect],
                   vars_: dict[str, list[str]], depth: int) -> None:
        for redirect in redirects:
            target = None
            if redirect.target is not None:
                target = self.expand(redirect.target, vars_, command.cwd, depth, split=False)[0][0]
            command.redirects.append((redirect.op, target))
            if redirect.body is not None:
                command.stdin_text = redirect.body
                if not redirect.quoted:  # its $(...) and backquotes run before the command
                    for part in body_parts(redirect.body):
                        if part.kind == "sub" and depth < MAX_DEPTH:
                            self.fold(part.text, vars_, command.cwd, depth)
            elif redirect.op == "<<<" and target is not None:
                command.stdin_text = target.text

    def _assignment(self, token: Token, vars_: dict[str, list[str]], cwd: str | None,
                    depth: int) -> str:
        """Record what a ``NAME=value`` word assigns; returns the name."""
        first = token.parts[0]
        match = _ASSIGNMENT.match(first.text)
        assert match is not None
        rest = [Part("lit", first.text[match.end():], first.quoted), *token.parts[1:]]
        values = ["".join(UNSPECIAL.get(ch, ch) for ch in v).replace(_SPLIT, " ")
                  for v in self.raw(rest, vars_, cwd, depth, split=False)]
        _assign(vars_, match.group(1), values)
        return match.group(1)

    def record(self, command: Command) -> None:
        if len(self.out.commands) <= MAX_COMMANDS:
            self.out.commands.append(command)


def _is_assignment(parts: list[Part]) -> bool:
    return bool(parts) and parts[0].kind == "lit" and not parts[0].quoted and bool(
        _ASSIGNMENT.match(parts[0].text))


def _split_redirects(tokens: list[Token]) -> tuple[list[Token], list[Redirect]]:
    """A simple command's words, and its redirections with their target words."""
    words: list[Token] = []
    redirects: list[Redirect] = []
    expecting: Redirect | None = None
    for token in tokens:
        if token.kind == "redir" and token.redirect is not None:
            redirects.append(token.redirect)
            expecting = token.redirect if token.redirect.body is None and \
                token.op not in ("<<", "<<-") else None
        elif expecting is not None:
            expecting.target = token.parts
            expecting = None
        else:
            words.append(token)
    return words, redirects


def _literal(parts: list[Part], prefix: bool = False) -> str | None:
    """The word's text when it is one literal piece (or, with ``prefix``, its literal start)."""
    if not parts or parts[0].kind != "lit":
        return None
    if len(parts) > 1 and not prefix:
        return None
    return "".join(UNSPECIAL.get(ch, ch) for ch in parts[0].text)


def _assign(vars_: dict[str, list[str]], name: str, values: list[str]) -> None:
    """Every value a variable may hold (a later assignment may sit in a branch)."""
    known = vars_.setdefault(name, [])
    for value in values:
        if value not in known and len(known) < 8:
            known.append(value)


def _activate(value: str, split: bool) -> str:
    """An unquoted expansion's value: its blanks split fields, its glob characters work."""
    out = "".join(SPECIAL.get(ch, ch) if ch in "*?[" else ch for ch in value)
    return re.sub(r"[ \t\n]+", _SPLIT, out) if split else out


def _braces(text: str) -> list[str]:
    """Brace expansion of unquoted ``{a,b}`` (nested braces included), at most 64 words."""
    start = text.find(LBRACE)
    while start >= 0:
        depth, commas, end = 0, [], -1
        for i in range(start, len(text)):
            if text[i] == LBRACE:
                depth += 1
            elif text[i] == RBRACE:
                depth -= 1
                if depth == 0:
                    end = i
                    break
            elif text[i] == COMMA and depth == 1:
                commas.append(i)
        if end >= 0 and commas:
            out: list[str] = []
            for a, b in itertools.pairwise([start, *commas, end]):
                out.extend(_braces(text[:start] + text[a + 1:b] + text[end + 1:]))
                if len(out) >= 64:
                    break
            return out[:64]
        start = text.find(LBRACE, start + 1)
    return [text]


def _word(raw: str) -> Word:
    text = "".join(UNSPECIAL.get(ch, ch) for ch in raw.replace(_UNKNOWN, ""))
    pattern = []
    for ch in raw:
        if ch == _UNKNOWN:
            pattern.append("*")
        elif ch in UNSPECIAL and UNSPECIAL[ch] in "*?[":
            pattern.append(UNSPECIAL[ch])
        else:
            literal = UNSPECIAL.get(ch, ch)
            pattern.append(f"[{literal}]" if literal in "*?[" else literal)
    glob = any(ch in UNSPECIAL and UNSPECIAL[ch] in "*?[" for ch in raw)
    return Word(text=text, pattern="".join(pattern), dynamic=_UNKNOWN in raw, glob=glob)


def _tilde(text: str, home: str) -> str:
    """``~`` and ``~/x`` in the home directory; ``~user/x`` in that user's (unchanged when
    there is no such user, as bash leaves it)."""
    name, slash, rest = text[1:].partition("/")
    if not name:
        return home + text[1:]
    try:
        import pwd

        return pwd.getpwnam(name).pw_dir + slash + rest
    except (KeyError, ImportError):
        return text


def _next_cwd(made: list[Command], cwd: str | None, home: str, cdpath: bool) -> str | None:
    """The directory after ``cd``/``pushd`` (None when it cannot be known: ``CDPATH`` may
    send a relative ``cd`` elsewhere)."""
    for command in made:
        if command.program not in ("cd", "pushd", "popd"):
            continue
        args = [w for w in command.args if not w.text.startswith("-")]
        if command.program == "popd" or (args and (args[0].dynamic or args[0].glob)):
            return None
        target = args[0].text if args else home
        if (cdpath or "CDPATH" in command.env) and not target.startswith(("/", "./", "../")):
            return None
        if cwd is None and not target.startswith("/"):
            return None
        return posixpath.normpath(os.path.join(cwd or "/", target))
    return cwd


def read_script(text: str, cwd: str | None, home: str,
                inherited: frozenset[str] | None = None) -> Script:
    """Every command ``text`` would run (see the module docstring); ``inherited`` are the
    variables its commands inherit (the daemon's environment by default). Cached: the gate
    reads one command several times (verdict, grants, policies); treat the result as
    read-only."""
    return _read(text, cwd, home, frozenset(os.environ) if inherited is None else inherited)


@functools.lru_cache(maxsize=64)
def _read(text: str, cwd: str | None, home: str, inherited: frozenset[str]) -> Script:
    out = Script()
    Reader(home, out, inherited).read(text, {}, cwd, 0)
    for command in out.commands:
        command.function = command.program in out.functions
    return out
