"""The clock's verdicts: in time, late, or no answer; and the time bank."""

from __future__ import annotations

import pytest

from referee.clock import MAX_MARGIN_MS, Clocks, TimeBank, verdict
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


def test_a_margin_forgives_an_answer_late_by_no_more_than_it() -> None:
    assert verdict(1300.0, 1000, 300) is None
    late = verdict(1300.1, 1000, 300)
    assert isinstance(late, PlayerTimeout)
    assert late.detail == "answered after 1300 ms, limit 1000 ms + 300 ms margin"
    missing = Clocks(margin_ms=300).verdict(None, 1000)
    assert isinstance(missing, PlayerTimeout)
    assert missing.detail == "no answer within 1000 ms + 300 ms margin"
    assert Clocks(margin_ms=300).wait_ms(1000) == 1300


def test_a_margin_never_fills_the_bank_nor_is_told() -> None:
    clocks = Clocks(play_ms=1000, time_bank_ms=200, margin_ms=300)
    bank = clocks.bank()
    # Told: the clock and the bank, not the margin.
    assert bank.allowance_ms(1000) == 1200
    # Late by 400 ms: the bank pays 200, the margin forgives the rest.
    assert bank.charge(1000, 1400) is None and bank.remaining_ms == 0
    assert bank.charge(1000, 1300) is None
    assert isinstance(bank.charge(1000, 1300.5), PlayerTimeout)


def test_the_record_of_clocks_leaves_the_margin_to_its_own_field() -> None:
    clocks = Clocks(5000, 200, 0, 1000)
    assert clocks.recorded() == {"start_ms": 5000, "play_ms": 200, "time_bank_ms": 0}


@pytest.mark.parametrize(
    ("margin", "message"),
    [
        (-1, "time margin must be zero or a positive"),
        (MAX_MARGIN_MS + 1, "time margin must be at most"),
    ],
)
def test_a_margin_is_from_zero_to_a_day(margin: int, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Clocks(margin_ms=margin)
