"""Symbols are checked the same way however often they are checked: a panel checks its
universe at each step, and the normal form of a good symbol is remembered."""

from __future__ import annotations

import pytest

from mdframes.errors import InvalidParameterError
from mdframes.params import check_symbol, check_symbols


class _Text(str):
    """A str subclass (a caller's own text type)."""


@pytest.mark.parametrize("bad", ["", "  ", "A/B", "A..B", "..", "A B", "A?", "\ud800", "A\x00"])
def test_a_bad_symbol_is_refused_every_time(bad: str) -> None:
    for _ in range(2):  # the second check is no looser than the first
        with pytest.raises(InvalidParameterError, match="invalid symbol"):
            check_symbol(bad, dataset="news")


def test_good_symbols_are_normalised_every_time_and_other_types_refused() -> None:
    for _ in range(2):
        assert check_symbols([" aapl", "AAPL", "brk.b", _Text(" ko ")]) == ["AAPL", "BRK.B", "KO"]
    assert type(check_symbol(_Text("ko"))) is str
    with pytest.raises(InvalidParameterError, match="must be a string"):
        check_symbol(3)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="must be a string"):
        check_symbol(["AAPL"])  # type: ignore[arg-type]
