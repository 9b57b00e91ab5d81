"""Bash text split into tokens the way bash splits it, for judging a command (never running it).

Words keep their parts apart (literal text, quoted or not; ``$name``; ``$(...)``;
``<(...)``), so that the next layer (``shell``) can expand them with what it knows
of the script's variables: ``x=rm; $x -rf /`` and ``$(echo rm) -rf /`` are read
as ``rm -rf /``. Quote removal follows bash (``envir''on`` is ``environ``,
``$'\\x72m'`` is ``rm``); unquoted glob and brace characters are kept apart from
quoted ones, which are plain text. Here-documents are attached to their
redirection. Unbalanced quotes or parentheses raise ``ShellSyntaxError``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Unquoted characters that mean something to globbing and brace expansion; in a word's
# text they are replaced by these private-use characters so quoted ones stay literal.
STAR, QMARK, LBRACKET, LBRACE, RBRACE, COMMA = (chr(0xE000 + n) for n in range(6))
SPECIAL = {"*": STAR, "?": QMARK, "[": LBRACKET, "{": LBRACE, "}": RBRACE, ",": COMMA}
UNSPECIAL = {v: k for k, v in SPECIAL.items()}

OPERATORS = (";;&", ";;", ";&", "&&", "||", "|&", "|", "&", ";", "(", ")")
REDIRECTIONS = ("&>>", "<<<", "<<-", "&>", ">>", "<<", ">&", "<&", "<>", ">|", "<", ">")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ANSI = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b",
         "f": "\f", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}


class ShellSyntaxError(ValueError):
    """The text is not complete shell syntax (an unclosed quote or parenthesis)."""


@dataclass(frozen=True, slots=True)
class Part:
    """One piece of a word.

    ``kind``: ``lit`` (text), ``var`` (``$name``; ``default`` from ``${name:-x}``),
    ``sub`` (``$(text)`` or backquotes), ``proc`` (``<(text)``), ``dyn`` (a value only
    known when it runs: ``$1``, ``$((...))``, ``${x/a/b}``).
    """

    kind: str
    text: str
    quoted: bool = False
    default: str | None = None


@dataclass(slots=True)
class Redirect:
    op: str
    fd: str = ""
    target: list[Part] | None = None
    body: str | None = None  # a here-document's text
    quoted: bool = False  # its delimiter was quoted: the body is not expanded


@dataclass(slots=True)
class Token:
    kind: str  # "word" | "op" | "redir"
    parts: list[Part] = field(default_factory=list)
    op: str = ""
    redirect: Redirect | None = None


def _matching(s: str, i: int, open_: str = "(", close: str = ")") -> int:
    """Index of the bracket closing the one just before ``i`` (quotes and nesting aware)."""
    depth = 1
    while i < len(s):
        c = s[i]
        if c == "\\":
            i += 2
            continue
        if c == "'":
            end = s.find("'", i + 1)
            if end < 0:
                break
            i = end + 1
            continue
        if c == '"':
            i = _skip_double(s, i + 1)
            continue
        if c == "`":
            i = _skip_backquote(s, i + 1) + 1
            continue
        if c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise ShellSyntaxError(f"unclosed {open_!r}")


def _skip_double(s: str, i: int) -> int:
    """Index just past the closing double quote of a string starting at ``i``."""
    while i < len(s):
        c = s[i]
        if c == "\\":
            i += 2
        elif c == '"':
            return i + 1
        elif s.startswith("$(", i):
            i = _matching(s, i + 2) + 1
        elif c == "`":
            i = _skip_backquote(s, i + 1) + 1
        else:
            i += 1
    raise ShellSyntaxError("unclosed double quote")


def _skip_backquote(s: str, i: int) -> int:
    """Index of the backquote closing one that opened just before ``i``."""
    while i < len(s):
        if s[i] == "\\":
            i += 2
        elif s[i] == "`":
            return i
        else:
            i += 1
    raise ShellSyntaxError("unclosed backquote")


def ansi_c(body: str) -> str:
    """The text of a ``$'...'`` string."""
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\" or i + 1 >= len(body):
            out.append(c)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in _ANSI:
            out.append(_ANSI[nxt])
            i += 2
            continue
        spans = {"x": (r"[0-9A-Fa-f]{1,2}", 16), "u": (r"[0-9A-Fa-f]{1,4}", 16),
                 "U": (r"[0-9A-Fa-f]{1,8}", 16)}
        if nxt in spans:
            match = re.match(spans[nxt][0], body[i + 2:])
            if match:
                out.append(chr(min(int(match.group(0), 16), 0x10FFFF)))
                i += 2 + len(match.group(0))
                continue
        octal = re.match(r"[0-7]{1,3}", body[i + 1:])
        if octal:
            out.append(chr(int(octal.group(0), 8)))
            i += 1 + len(octal.group(0))
            continue
        out.append("\\" + nxt)
        i += 2
    return "".join(out)


class Lexer:
    """Tokens of one piece of bash text."""

    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0
        self.tokens: list[Token] = []
        self.parts: list[Part] | None = None  # the word being read
        self.heredocs: list[tuple[Redirect, str, bool]] = []  # (redirect, delimiter, strip tabs)

    def run(self) -> list[Token]:
        s = self.s
        while self.i < len(s):
            self._step(s[self.i])
        self._end_word()
        if self.heredocs:
            self._read_heredocs()
        return self.tokens

    # -- words ---------------------------------------------------------------------

    def _add(self, kind: str, text: str, quoted: bool, default: str | None = None) -> None:
        if self.parts is None:
            self.parts = []
        last = self.parts[-1] if self.parts else None
        if kind == "lit" and last and last.kind == "lit" and last.quoted == quoted:
            self.parts[-1] = Part("lit", last.text + text, quoted)
        else:
            self.parts.append(Part(kind, text, quoted, default))

    def _end_word(self) -> None:
        if self.parts is not None:
            self.tokens.append(Token("word", parts=self.parts))
            self.parts = None

    def _step(self, c: str) -> None:
        s = self.s
        if c in " \t":
            self._end_word()
            self.i += 1
        elif c == "\n":
            self._end_word()
            self.tokens.append(Token("op", op=";"))
            self.i += 1
            self._read_heredocs()
        elif c == "#" and self.parts is None:
            end = s.find("\n", self.i)
            self.i = len(s) if end < 0 else end
        elif c == "\\":
            if s.startswith("\\\n", self.i):
                self.i += 2
            else:
                self._add("lit", s[self.i + 1:self.i + 2], True)
                self.i += 2
        elif c == "'":
            end = s.find("'", self.i + 1)
            if end < 0:
                raise ShellSyntaxError("unclosed single quote")
            self._add("lit", s[self.i + 1:end], True)
            self.i = end + 1
        elif c == '"':
            self._add("lit", "", True)  # "" is an empty word, not nothing
            self._double()
        elif c == "$":
            self._dollar(quoted=False)
        elif c == "`":
            end = _skip_backquote(s, self.i + 1)
            self._add("sub", _unescape_backquoted(s[self.i + 1:end]), False)
            self.i = end + 1
        elif c in "<>" and s.startswith("(", self.i + 1) and self.parts is None:
            end = _matching(s, self.i + 2)
            self._add("proc", s[self.i + 2:end], False)
            self.i = end + 1
        elif not self._operator():
            self._add("lit", SPECIAL.get(c, c), False)
            self.i += 1

    def _operator(self) -> bool:
        """An operator or redirection at the cursor: emit it and return True."""
        s, i = self.s, self.i
        if s[i] not in "<>&|;()":
            return False
        fd = ""
        if s[i] in "<>" and self.parts and len(self.parts) == 1:
            only = self.parts[0]
            if only.kind == "lit" and not only.quoted and only.text.isdigit():
                fd, self.parts = only.text, None
        for op in REDIRECTIONS:
            if s.startswith(op, i):
                self._end_word()
                redirect = Redirect(op, fd)
                self.tokens.append(Token("redir", op=op, redirect=redirect))
                self.i = i + len(op)
                if op in ("<<", "<<-"):
                    self._heredoc_word(redirect, op == "<<-")
                return True
        for op in OPERATORS:
            if s.startswith(op, i):
                self._end_word()
                self.tokens.append(Token("op", op=op))
                self.i = i + len(op)
                return True
        return False

    def _double(self, to_end: bool = False) -> None:
        """A double-quoted string starting at its quote (``to_end``: the whole text, read as
        if it were one, quotes included: a here-document's body)."""
        s = self.s
        self.i += 0 if to_end else 1
        while self.i < len(s):
            c = s[self.i]
            if c == '"' and not to_end:
                self.i += 1
                return
            if c == "\\" and self.i + 1 < len(s):
                nxt = s[self.i + 1]
                if nxt != "\n":
                    self._add("lit", nxt if nxt in '$`"\\' else "\\" + nxt, True)
                self.i += 2
            elif c == "$":
                self._dollar(quoted=True)
            elif c == "`":
                end = _skip_backquote(s, self.i + 1)
                self._add("sub", _unescape_backquoted(s[self.i + 1:end]), True)
                self.i = end + 1
            else:
                self._add("lit", c, True)
                self.i += 1
        if not to_end:
            raise ShellSyntaxError("unclosed double quote")

    def _dollar(self, quoted: bool) -> None:
        s, i = self.s, self.i
        if s.startswith("$((", i):
            end = _matching(s, i + 3)
            self._add("dyn", s[i:end + 2], quoted)
            self.i = _expect(s, end + 1, ")") + 1
        elif s.startswith("$(", i):
            end = _matching(s, i + 2)
            self._add("sub", s[i + 2:end], quoted)
            self.i = end + 1
        elif s.startswith("${", i):
            end = _matching(s, i + 2, "{", "}")
            self._param(s[i + 2:end], quoted)
            self.i = end + 1
        elif s.startswith("$'", i) and not quoted:
            end = i + 2
            while end < len(s) and s[end] != "'":
                end += 2 if s[end] == "\\" else 1
            if end >= len(s):
                raise ShellSyntaxError("unclosed $'")
            self._add("lit", ansi_c(s[i + 2:end]), True)
            self.i = end + 1
        elif s.startswith('$"', i) and not quoted:
            self.i += 1
            self._add("lit", "", True)
            self._double()
        else:
            name = _NAME.match(s, i + 1)
            if name:
                self._add("var", name.group(0), quoted)
                self.i = name.end()
            elif i + 1 < len(s) and (s[i + 1].isdigit() or s[i + 1] in "@*#?$!-"):
                self._add("dyn", s[i:i + 2], quoted)
                self.i = i + 2
            else:
                self._add("lit", "$", quoted)
                self.i = i + 1

    def _param(self, inner: str, quoted: bool) -> None:
        """``${...}``: a plain name, a name with a default, or something only known at run time."""
        if _NAME.fullmatch(inner):
            self._add("var", inner, quoted)
            return
        match = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*):?[-=]([^$`]*)", inner)
        if match:
            default = match.group(2).replace("'", "").replace('"', "")
            self._add("var", match.group(1), quoted, default)
        else:
            self._add("dyn", "${" + inner + "}", quoted)

    # -- here-documents ------------------------------------------------------------

    def _heredoc_word(self, redirect: Redirect, strip_tabs: bool) -> None:
        """The delimiter word after ``<<``; the body is read at the end of the line."""
        s = self.s
        while self.i < len(s) and s[self.i] in " \t":
            self.i += 1
        match = re.match(r"""(?:[^\s;&|<>()'"\\]|\\.|'[^']*'|"[^"]*")+""", s[self.i:])
        if not match:
            raise ShellSyntaxError("here-document without a delimiter")
        self.i += match.end()
        raw = match.group(0)
        # Any quoting in the delimiter (`'EOF'`, `"EOF"`, `\EOF`, `E"O"F`) stops expansion.
        redirect.quoted = any(q in raw for q in "'\"\\")
        delimiter = re.sub(r"""\\(.)|['"]""", r"\1", raw)
        self.heredocs.append((redirect, delimiter, strip_tabs))

    def _read_heredocs(self) -> None:
        s = self.s
        for redirect, delimiter, strip_tabs in self.heredocs:
            lines: list[str] = []
            while self.i < len(s):
                end = s.find("\n", self.i)
                line = s[self.i:] if end < 0 else s[self.i:end]
                self.i = len(s) if end < 0 else end + 1
                if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                    break
                lines.append(line)
            redirect.body = "\n".join(lines)
        self.heredocs.clear()


def _expect(s: str, i: int, ch: str) -> int:
    if i >= len(s) or s[i] != ch:
        raise ShellSyntaxError(f"expected {ch!r}")
    return i


def _unescape_backquoted(text: str) -> str:
    return re.sub(r"\\([\\`$])", r"\1", text)


def body_parts(body: str) -> list[Part]:
    """The parts of an unquoted here-document's body: it expands like a double-quoted
    string (``$x``, ``$(...)``, backquotes), its quotes being plain text."""
    lexer = Lexer(body)
    lexer._double(to_end=True)
    return lexer.parts or []


def tokenize(text: str) -> list[Token]:
    """The tokens of ``text``; raises ``ShellSyntaxError``."""
    return Lexer(text).run()
