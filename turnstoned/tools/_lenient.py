"""The one lenient reading of argument values the model sends (numbers and flags as text).

Models write ``"true"``, ``"5"`` or ``5.0`` where a schema says boolean or integer;
every tool reads such values through these functions, so the rules are the same
everywhere:

- a flag is true for ``true``, a non-zero number, or the words true/1/yes/on (any case);
- an integer is an int, a finite float (cut toward zero), or text spelling one of those;
  a boolean is not an integer;
- ``None`` and blank text mean "not given" (``int_or`` then answers its default).
"""

from __future__ import annotations

import math

TRUE_WORDS = frozenset({"true", "1", "yes", "on"})


def is_blank(value: object) -> bool:
    """Not given: None, or text with nothing but whitespace."""
    return value is None or (isinstance(value, str) and not value.strip())


def as_bool(value: object) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in TRUE_WORDS
    if isinstance(value, (bool, int, float)):
        return bool(value)
    return False


def as_int(value: object) -> int | None:
    """The integer the model means, or None when ``value`` is not one (or not given)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text)
        except ValueError:
            try:
                value = float(text)
            except ValueError:
                return None
    if isinstance(value, float):
        return int(value) if math.isfinite(value) else None
    return None


def int_or(value: object, default: int) -> int | None:
    """``default`` when not given, the integer, or None when the value is not an integer."""
    return default if is_blank(value) else as_int(value)
