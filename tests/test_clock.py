"""The clock's verdicts: in time, late, or no answer; and the time bank."""

from __future__ import annotations

import pytest

from referee.clock import Clocks, TimeBank, verdict
from referee.errors import ConfigError, PlayerTimeout


def test_an_answer_within_the_limit_is_in_time_even_at_the_limit() -> None:
    assert verdict(999.9, 1000) is None
    assert verdict(1000.0, 1000) is None


def test_late_and_missing_answers_are_timeouts_that_say_which() -> None:
    late = verdict(1000.4, 1000)
    assert isinstance(late, PlayerTimeout)
    assert late.detail == "answered after 1000 ms, limit 1000 ms"
    missing = verdict(None, 300)
    assert isinstance(missing, PlayerTimeout) and missing.detail == "no answer within 300 ms"


def test_time_bank_pays_overruns_until_it_is_empty() -> None:
    bank = TimeBank(300)
    assert bank.allowance_ms(1000) == 1300
    assert bank.charge(1000, 900) is None
    assert bank.remaining_ms == 300
    assert bank.charge(1000, 1200.2) is None
    assert bank.remaining_ms == 99
    assert isinstance(bank.charge(1000, 1100), PlayerTimeout)
    assert bank.remaining_ms == 99
    assert bank.charge(1000, 1099) is None
    assert bank.remaining_ms == 0
    assert isinstance(bank.charge(1000, None), PlayerTimeout)


@pytest.mark.parametrize(
    ("clocks", "message"),
    [((0, 1000, 0), "start clock"), ((1000, -5, 0), "play clock"), ((1000, 1000, -1), "time bank")],
)
def test_clocks_must_be_positive(clocks: tuple[int, int, int], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Clocks(*clocks)
