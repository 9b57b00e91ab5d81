"""The stop condition of a watch: a small expression language, interpreted, never ``eval``'d.

A condition is one Python-syntax expression over the names ``output`` (the
command's output), ``data`` (``output`` parsed as JSON, or None), ``exit_code``,
``prev_output`` (None on the first poll) and ``changed``. It is parsed with
``ast`` and checked against a whitelist before it is ever run; then a tree
walker evaluates it. There is no way to name an attribute that starts with an
underscore, to call anything but the listed functions and methods, to build a
function, a comprehension, a format string, or to bind a name.

The language: literals (strings, numbers, True/False/None, lists, tuples,
dicts), ``and``/``or``/``not``, comparisons (``== != < <= > >= in not in is
is not``), arithmetic (``+ - * / // % **``), ``x if c else y``, subscripts and
slices, the functions ``len str int float bool abs min max any all isinstance
sorted`` and a few methods of strings, dicts and lists (``METHODS``).

Limits keep one evaluation small and short: the source length, the number and
nesting of syntax nodes, the size of every value made on the way (strings,
lists and the numbers' bits are checked *before* an operation builds them) and
a deadline checked between steps. Each node runs at most once (there are no
loops), so the deadline is reached within one step of being passed.
"""

from turnstoned.condition.check import compile_condition
from turnstoned.condition.language import Condition, ConditionError
from turnstoned.condition.run import evaluate, parse_data

__all__ = ["Condition", "ConditionError", "compile_condition", "evaluate", "parse_data"]
