"""The answers kept for a moment (`referee.arena.reading.fresh`)."""

from __future__ import annotations

import threading
from collections.abc import Callable

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


class Held:
    """A maker that, once started, holds until it is let go: `b"held"`."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.go = threading.Event()
        self.made = 0

    def __call__(self) -> bytes:
        self.made += 1
        self.started.set()
        assert self.go.wait(10)
        return b"held"


def in_thread(work: Callable[[], bytes]) -> tuple[threading.Thread, list[bytes]]:
    got: list[bytes] = []
    thread = threading.Thread(target=lambda: got.append(work()))
    thread.start()
    return thread, got


def test_while_an_answer_is_made_anew_the_last_one_is_given_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [100.0]
    monkeypatch.setattr(fresh.time, "monotonic", lambda: now[0])
    kept, held = Fresh(1.0), Held()
    assert kept.get("a", Maker()) == b"1"
    now[0] += 2.0
    thread, got = in_thread(lambda: kept.get("a", held))
    assert held.started.wait(10)
    assert kept.get("a", Maker()) == b"1", "the last one, not waited for"
    held.go.set()
    thread.join(10)
    assert got == [b"held"] and kept.get("a", Maker()) == b"held"


def test_an_answer_not_made_yet_is_waited_for_and_other_things_are_made_meanwhile() -> None:
    kept, held = Fresh(60.0), Held()
    first, got = in_thread(lambda: kept.get("b", held))
    assert held.started.wait(10)
    second, also = in_thread(lambda: kept.get("b", held))
    assert kept.get("c", Maker()) == b"1", "another thing asked is not held up"
    held.go.set()
    first.join(10)
    second.join(10)
    assert got == also == [b"held"] and held.made == 1


def test_an_answer_begun_before_a_clear_is_not_kept() -> None:
    kept, held = Fresh(60.0), Held()
    thread, got = in_thread(lambda: kept.get("a", held))
    assert held.started.wait(10)
    kept.clear()
    held.go.set()
    thread.join(10)
    assert got == [b"held"], "given to who asked"
    assert kept.get("a", Maker()) == b"1", "made again: it showed what changed"
