"""Normalising memory names and descriptions as the model writes them.

A name becomes an ASCII snake_case key: case-folded, runs of spaces and dashes
become one ``_``, Latin letters lose their diacritics (``é`` -> ``e``) or take
their usual ASCII spelling (``æ`` -> ``ae``, ``ß`` -> ``ss``, ``þ`` -> ``th``).
Anything else is refused with a message that says how to fix it.
"""

from __future__ import annotations

import re
import unicodedata

NAME_MAX = 256
DESCRIPTION_MAX = 512
NAME_PATTERN = re.compile(r"^[a-z0-9]+(?:_[a-z0-9]+)*$")

_FOLDS = {
    "æ": "ae", "œ": "oe", "ø": "o", "đ": "d", "ð": "d", "ħ": "h", "ı": "i", "ł": "l",
    "ŋ": "n", "þ": "th", "ŧ": "t", "ß": "ss",
}
# Unicode whitespace that str.split() does not treat as such.
_EXTRA_SPACE = "\ufeff"

ERR_REQUIRED = "memory name is required"
ERR_NON_LATIN = ("memory name contains unsupported characters; choose an ASCII semantic key "
                 "such as 'project_conventions' (Latin letters, digits, underscores)")
ERR_PUNCTUATION = ("memory name may contain only Latin letters, ASCII digits, spaces, hyphens, "
                   "and single underscores")
ERR_SHAPE = ("memory name must normalize to ASCII snake_case without leading, trailing, or "
             "repeated underscores (e.g. 'build_commands')")


class MemoryInputError(ValueError):
    """The name or description cannot be used; the text says why."""


def _is_separator(char: str) -> bool:
    return char == "-" or unicodedata.category(char) in ("Zs", "Pd")


def _fold_char(char: str) -> str:
    """One case-folded, decomposed character as ASCII; raises on what cannot be spelled."""
    if char.isascii() and (char.isalnum() or char == "_"):
        return char
    if char in _FOLDS:
        return _FOLDS[char]
    category = unicodedata.category(char)
    if category == "Mn":  # a diacritic split off its letter by NFKD
        return ""
    if category.startswith("L") or category == "Nd":
        if category.startswith("L") and unicodedata.name(char, "").startswith("LATIN "):
            base = "".join(c for c in unicodedata.normalize("NFKD", char)
                           if unicodedata.category(c) != "Mn")
            if base.isascii() and base.isalnum():
                return base
        raise MemoryInputError(ERR_NON_LATIN)
    raise MemoryInputError(ERR_PUNCTUATION)


def normalize_name(value: object) -> str:
    """The canonical key for ``value``; ``MemoryInputError`` with guidance when impossible."""
    if not isinstance(value, str):
        raise MemoryInputError(ERR_REQUIRED if value is None else "memory name must be a string")
    text = unicodedata.normalize("NFKD", value.strip().casefold())
    if not text:
        raise MemoryInputError(ERR_REQUIRED)
    out: list[str] = []
    pending_gap = False
    for char in text:
        if _is_separator(char):
            pending_gap = True
            continue
        if pending_gap and out:
            out.append("_")
        pending_gap = False
        out.append(_fold_char(char))
    name = "".join(out)
    if len(name) > NAME_MAX:
        raise MemoryInputError(f"memory name exceeds {NAME_MAX} characters")
    if not NAME_PATTERN.match(name):
        raise MemoryInputError(ERR_SHAPE)
    return name


def normalize_description(value: object) -> str:
    """Whitespace runs collapsed to one space; 1..512 characters."""
    if not isinstance(value, str):
        raise MemoryInputError("memory description is required and must be non-empty")
    text = " ".join(value.replace(_EXTRA_SPACE, " ").split())
    if not text:
        raise MemoryInputError("memory description is required and must be non-empty")
    if len(text) > DESCRIPTION_MAX:
        raise MemoryInputError(f"memory description exceeds {DESCRIPTION_MAX} characters")
    return text
