"""The answers kept for a moment (`referee.arena.reading.fresh`)."""

from __future__ import annotations

import pytest

from referee.arena.reading import fresh
from referee.arena.reading.fresh import Fresh


class Maker:
    """Makes answers, counting them: `b"N"` for the Nth."""

    def __init__(self) -> None:
        self.made = 0

    def __call__(self) -> bytes:
        self.made += 1
        return str(self.made).encode()


def test_an_answer_is_made_once_a_moment_for_each_thing_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [100.0]
    monkeypatch.setattr(fresh.time, "monotonic", lambda: now[0])
    kept, make = Fresh(1.0), Maker()
    assert [kept.get("a", make) for _ in range(5)] == [b"1"] * 5
    assert kept.get("b", make) == b"2"
    now[0] += 1.0
    assert kept.get("a", make) == b"1", "as made, for its whole second"
    now[0] += 0.01
    assert kept.get("a", make) == b"3", "made again once its second is over"
    kept.clear()
    assert kept.get("b", make) == b"4", "forgotten, made again"
    assert make.made == 4


def test_the_oldest_asked_is_forgotten_past_the_most_kept() -> None:
    kept, make = Fresh(60.0, most=2), Maker()
    kept.get("a", make)
    kept.get("b", make)
    kept.get("a", make)  # asked again: the newest
    kept.get("c", make)  # b goes
    assert make.made == 3
    kept.get("a", make)
    assert make.made == 3
    kept.get("b", make)
    assert make.made == 4
