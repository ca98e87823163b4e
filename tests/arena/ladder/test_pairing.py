"""The ladder's pairing: never a version against itself or its own bot, both seats with one
seed, placing versions first, close ratings, every game its share, and no version starves."""

from __future__ import annotations

import random
from collections import Counter

from referee.arena.ladder.pairing import CLOSE_FEW, Entry, Pair, plan, waits, window
from referee.arena.store.config import PairingRule

GAMES = {"ticblock": 0, "quad": 0, "hex-pie": 0}


def rated(version: int, bot: int, rating: float, margin: float, matches: int = 40) -> Entry:
    return Entry(version, bot, False, matches, rating, margin, 0)


def spread_field() -> list[Entry]:
    """Ten versions of ten bots, of very different ratings and margins."""
    return [
        rated(v, v, rating=(-1) ** v * 300.0 * v, margin=5.0 + 40 * (v % 3), matches=10 * v + 2)
        for v in range(10)
    ]


def planned_in_steps(entries: list[Entry], pairs: int, step: int, seed: int) -> list[Pair]:
    """Pairs planned `step` at a time, each call given the state the last one left."""
    rng = random.Random(seed)
    games = dict(GAMES)
    made: list[Pair] = []
    while len(made) < pairs:
        result = plan(entries, step, games, PairingRule.CLOSE, 10, rng)
        made += result.pairs
        entries, games = result.entries, result.games
    return made[:pairs]


def test_a_pair_is_two_versions_of_different_bots_in_both_seats_with_one_seed() -> None:
    entries = [*spread_field(), rated(10, 3, 0.0, 30.0), rated(11, 3, 10.0, 30.0)]
    bots = {entry.version: entry.bot for entry in entries}
    for rule in PairingRule:
        made = plan(entries, 300, GAMES, rule, 10, random.Random(1)).pairs
        assert len(made) == 300
        for pair in made:
            assert pair.first != pair.second
            assert bots[pair.first] != bots[pair.second]
            assert pair.seatings == ((pair.first, pair.second), (pair.second, pair.first))
            assert 0 <= pair.seed < 2**31
        assert len({pair.seed for pair in made}) > 290  # each pair its own


def test_no_pair_when_only_versions_of_one_bot_are_left() -> None:
    entries = [rated(1, 7, 0.0, 10.0), rated(2, 7, 5.0, 10.0)]
    assert plan(entries, 5, GAMES, PairingRule.CLOSE, 10, random.Random(1)).pairs == []
    assert plan(entries[:1], 5, GAMES, PairingRule.RANDOM, 10, random.Random(1)).pairs == []


def test_no_version_starves_in_any_window() -> None:
    entries = spread_field()
    size = len(entries)
    for step in (1, 4):
        made = planned_in_steps(entries, 1000, step, seed=step)
        for start in range(len(made) - window(size) + 1):
            seen = {
                v for pair in made[start : start + window(size)] for v in (pair.first, pair.second)
            }
            assert seen == set(range(size)), f"window at {start} (step {step}) misses some"


def test_the_most_uncertain_goes_first_and_meets_a_close_rating() -> None:
    entries = [rated(v, v, rating=100.0 * v, margin=20.0) for v in range(8)]
    entries[5] = rated(5, 5, rating=500.0, margin=300.0)
    for seed in range(20):
        [pair] = plan(entries, 1, GAMES, PairingRule.CLOSE, 10, random.Random(seed)).pairs
        assert pair.first == 5
        nearest = sorted(range(8), key=lambda v: abs(100 * v - 500))[1 : CLOSE_FEW + 1]
        assert pair.second in nearest


def test_random_pairing_reaches_every_opponent() -> None:
    entries = [rated(v, v, rating=100.0 * v, margin=20.0) for v in range(8)]
    entries[0] = rated(0, 0, rating=0.0, margin=300.0)
    opponents = {
        plan(entries, 1, GAMES, PairingRule.RANDOM, 10, random.Random(seed)).pairs[0].second
        for seed in range(200)
    }
    assert opponents == set(range(1, 8))


def test_placing_versions_play_first_until_they_have_their_placement_matches() -> None:
    old = [rated(v, v, rating=50.0 * v, margin=400.0) for v in range(6)]
    # Two versions of one bot: they never meet, so each placement pair is one of theirs.
    new = [Entry(10, 10, True, 0, None, None, 0), Entry(11, 10, True, 4, None, None, 0)]
    made = plan([*old, *new], 4, GAMES, PairingRule.CLOSE, 6, random.Random(3)).pairs
    # 11 needs one pair, 10 three; each pair counts two matches.
    assert Counter(pair.first for pair in made) == Counter({10: 3, 11: 1})
    assert all(pair.second in range(6) for pair in made)


def test_each_game_gets_its_share() -> None:
    games = {"ticblock": 5, "quad": 0, "hex-pie": 2}
    result = plan(spread_field(), 30, games, PairingRule.CLOSE, 10, random.Random(2))
    assert Counter(pair.game for pair in result.pairs) == {"quad": 12, "hex-pie": 10, "ticblock": 8}
    assert result.games == {"ticblock": 13, "quad": 12, "hex-pie": 12}


def test_pairing_is_a_function_of_the_random_generator() -> None:
    first = planned_in_steps(spread_field(), 50, 3, seed=9)
    assert first == planned_in_steps(spread_field(), 50, 3, seed=9)
    assert first != planned_in_steps(spread_field(), 50, 3, seed=10)


def test_waits_count_the_pairs_since_each_versions_last() -> None:
    recent = [(1, 2), (3, 4), (1, 3)]  # newest first
    assert waits(recent, [1, 2, 3, 4, 5]) == {1: 0, 2: 0, 3: 1, 4: 1, 5: 3}


def test_a_placing_version_meets_opponents_spread_over_the_whole_ladder() -> None:
    # Twenty rated versions, 0 to 1900; a newcomer with its predecessor's rating of 1000.
    ladder = [rated(v, v, rating=100.0 * v, margin=20.0) for v in range(20)]
    newcomer = Entry(99, 99, True, 0, 1000.0, 300.0, 0)
    made = plan([*ladder, newcomer], 5, GAMES, PairingRule.CLOSE, 10, random.Random(4)).pairs
    assert [pair.first for pair in made] == [99] * 5
    met = sorted(pair.second for pair in made)
    # Five pairs: no two opponents in one fifth of the ladder, the weakest and the
    # strongest fifths met too (close pairing would meet only the few around 1000).
    assert len({v // 4 for v in met}) == 5, met
