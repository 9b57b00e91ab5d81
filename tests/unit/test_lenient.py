"""One reading of the numbers and flags models send as text, for every tool."""

from __future__ import annotations

import pytest

from turnstoned.tools._lenient import as_bool, as_int, int_or, is_blank


@pytest.mark.parametrize(("value", "expected"), [
    (5, 5), ("5", 5), (" 7 ", 7), (5.9, 5), ("30.5", 30), ("-3", -3), (-2.5, -2),
    (True, None), (False, None), (None, None), ("", None), ("five", None), ([5], None),
    (float("nan"), None), (float("inf"), None), ("inf", None), ("1e3", 1000),
])
def test_integers_the_way_the_model_means_them(value: object, expected: int | None) -> None:
    assert as_int(value) == expected


@pytest.mark.parametrize(("value", "expected"), [
    (True, True), (False, False), ("true", True), (" YES ", True), ("on", True), ("1", True),
    ("false", False), ("no", False), ("", False), (1, True), (0, False), (0.5, True),
    (None, False), ([True], False),
])
def test_flags(value: object, expected: bool) -> None:
    assert as_bool(value) is expected


def test_not_given_takes_the_default_and_a_bad_value_is_refused() -> None:
    assert int_or(None, 20) == 20 and int_or("  ", 20) == 20 and int_or("3", 20) == 3
    assert int_or("many", 20) is None and int_or(True, 20) is None
    assert is_blank(None) and is_blank(" ") and not is_blank(0)
