"""A Swiss round of a large field is paired on a sparse graph, with prices that prove no
pairing of the complete graph costs less; a small one on the complete graph, compiled. Both
cost exactly what the pairing before issue 70 (networkx's maximum-weight matching of the
complete graph, kept in tests/support) costs, round after round, with seeded random
results; and everyone is paired once."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from referee.tournaments.swiss import Past, matching_players, pair
from referee.tournaments.swiss_matching import (
    Players,
    complete_least_cost,
    least_cost,
    sparse_least_cost,
)
from tests.support import swiss_reference

Matching = Callable[[Players], list[tuple[int, int]]]


def compare_rounds(
    size: int, games: int, rounds: int, seed: int, matchings: tuple[Matching, ...]
) -> None:
    """Each round paired by `pair`, and by each of `matchings`, costs what the reference's
    pairing of the same players costs; the rounds' results drawn at random from `seed`."""
    field = [f"p{n:03d}" for n in range(size)]
    rng, past = random.Random(seed), Past()
    order = {name: index for index, name in enumerate(field)}
    for number in range(1, rounds + 1):
        played = pair(number, field, past, games)
        standing = sorted(field, key=lambda name: (-past.scores[name], order[name]))
        if played.bye is not None:
            standing.remove(played.bye)
        reference = swiss_reference.matched(standing, past, games)
        best = swiss_reference.total(standing, past, games, reference)
        found = [list(played.pairs)]
        players = matching_players(standing, past, games)
        for matching in matchings:
            found.append([(standing[i], standing[j]) for i, j in matching(players)])
        for pairs in found:
            seated = sorted(name for p in pairs for name in p)
            assert seated == sorted(standing), (size, games, seed, number)
            ours = swiss_reference.total(standing, past, games, pairs)
            assert ours == best, (size, games, seed, number)
        swiss_reference.play_round(played, past, games, rng)


@pytest.mark.parametrize("games", [1, 2])
@pytest.mark.parametrize("size", [16, 17, 40])
def test_a_small_field_is_paired_at_the_complete_graphs_least_cost(size: int, games: int) -> None:
    for seed in range(2):
        compare_rounds(size, games, 7, seed, (complete_least_cost, sparse_least_cost))


@pytest.mark.slow
@pytest.mark.parametrize("games", [1, 2])
@pytest.mark.parametrize("size", [100, 200])
def test_a_large_field_is_paired_at_the_complete_graphs_least_cost(size: int, games: int) -> None:
    # `pair` takes the sparse graph above 64 players.
    compare_rounds(size, games, 4 if size == 200 else 7, size + games, (sparse_least_cost,))


def test_a_field_that_must_meet_again_pays_the_least_for_it() -> None:
    # Four players who have all met: the prices cannot rule out a rematch, and the pairing
    # falls back to a wider graph; it still costs what the complete graph's does.
    field = ["a", "b", "c", "d"]
    past = Past()
    for a, b in (("a", "b"), ("c", "d"), ("a", "c"), ("b", "d"), ("a", "d"), ("b", "c")):
        past.met.add(frozenset((a, b)))
    past.scores.update({"a": 3.0, "b": 2.0, "c": 1.0, "d": 0.0})
    played = pair(4, field, past, 2)
    reference = swiss_reference.matched(field, past, 2)
    assert swiss_reference.total(field, past, 2, list(played.pairs)) == swiss_reference.total(
        field, past, 2, reference
    )


def test_an_empty_round_and_a_single_pair() -> None:
    assert least_cost(Players([], [], [], [])) == []
    assert least_cost(Players([2, 0], [-1, -1], [False, False], [(0, 1)])) == [(0, 1)]
