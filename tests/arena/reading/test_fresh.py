"""The answers kept for a moment (`referee.arena.reading.fresh`)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from referee.arena.reading import fresh
from referee.arena.reading.fresh import Fresh
from referee.arena.store.errors import Busy


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
    assert kept.get("a", make) == b"1", "past its second: as made, while it is made anew"
    until(lambda: kept.get("a", make) == b"3")
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


def until(done: Callable[[], bool]) -> None:
    """Wait for `done`, 10 s at most (by `perf_counter`: the tests stop `monotonic`)."""
    deadline = time.perf_counter() + 10
    while not done():
        assert time.perf_counter() < deadline
        time.sleep(0.01)


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
    assert kept.get("a", held) == b"1", "the last one, made anew in a thread"
    assert held.started.wait(10)
    assert kept.get("a", Maker()) == b"1", "the last one, not waited for nor made again"
    held.go.set()
    until(lambda: kept.get("a", Maker()) == b"held")
    assert held.made == 1


def test_an_answer_that_cannot_be_made_anew_is_forgotten(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The next to ask makes it, and is told why it cannot be made (the database out)."""
    now = [100.0]
    monkeypatch.setattr(fresh.time, "monotonic", lambda: now[0])
    kept = Fresh(1.0)
    assert kept.get("a", Maker()) == b"1"
    now[0] += 2.0

    def failing() -> bytes:
        raise Busy("the database does not answer")

    assert kept.get("a", failing) == b"1"
    until(lambda: "a" not in kept._kept)
    with pytest.raises(Busy):
        kept.get("a", failing)


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
