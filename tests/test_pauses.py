"""The collector's full passes: between matches, and only when they are due."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from referee.pauses import between_matches, short_pauses


@pytest.fixture
def full_passes() -> Iterator[list[int]]:
    """The generations of the collections made while the test runs, the oldest being 2."""
    passes: list[int] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            passes.append(info["generation"])

    gc.callbacks.append(seen)
    try:
        yield passes
    finally:
        gc.callbacks.remove(seen)


def test_the_oldest_generation_is_collected_between_matches_only_once_it_is_due(
    full_passes: list[int],
) -> None:
    with short_pauses():
        full_passes.clear()
        between_matches()
        assert 2 not in full_passes, "a full pass after a match that left little behind"
        # Each collection of the middle generation counts toward the oldest's.
        for _ in range(10):
            gc.collect(1)
        full_passes.clear()
        between_matches()
        assert full_passes == [2]
        full_passes.clear()
        between_matches()
        assert full_passes == [], "its count starts again after a full pass"


def test_no_full_pass_is_made_between_matches_where_the_collector_keeps_its_own_counts(
    full_passes: list[int],
) -> None:
    for _ in range(10):
        gc.collect(1)
    full_passes.clear()
    between_matches()
    assert full_passes == []
