"""The round-robin schedule: every pair, game, seating and round once, in a seeded order."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from referee.tournaments.config import TournamentConfig, load_config
from referee.tournaments.schedule import round_robin


def config(tmp_path: Path, seed: int, players: int = 4) -> TournamentConfig:
    path = tmp_path / "cup.yaml"
    entries = "".join(f"  - name: p{i}\n    command: random\n" for i in range(players))
    path.write_text(
        f"name: cup\nseed: {seed}\nrounds: 2\n"
        "games:\n  - ticblock\n  - id: quad\n    rounds: 3\n    play_clock: 250\n"
        f"players:\n{entries}"
    )
    return load_config(path)


def test_every_pair_plays_every_game_in_both_seatings_every_round(tmp_path: Path) -> None:
    schedule = round_robin(config(tmp_path, seed=1))
    # 6 pairs x 2 seatings x (2 rounds of ticblock + 3 of quad)
    assert len(schedule) == 6 * 2 * (2 + 3)
    seen = Counter((m.game.id, m.round, m.players) for m in schedule)
    assert set(seen.values()) == {1}
    for game, rounds in (("ticblock", 2), ("quad", 3)):
        for round_ in range(1, rounds + 1):
            seatings = {m.players for m in schedule if (m.game.id, m.round) == (game, round_)}
            assert len(seatings) == 12
            assert all(seating[::-1] in seatings for seating in seatings)
    assert {m.clocks.play_ms for m in schedule if m.game.id == "quad"} == {250}
    assert {m.clocks.play_ms for m in schedule if m.game.id == "ticblock"} == {1_000}


def test_matches_come_round_by_round(tmp_path: Path) -> None:
    rounds = [m.round for m in round_robin(config(tmp_path, seed=1))]
    assert rounds == sorted(rounds)


def test_order_ids_and_seeds_follow_the_seed(tmp_path: Path) -> None:
    first = round_robin(config(tmp_path, seed=1))
    again = round_robin(config(tmp_path, seed=1))
    other = round_robin(config(tmp_path, seed=2))
    assert first == again
    assert [m.match_id for m in first] != [m.match_id for m in other]
    assert len({m.match_id for m in first}) == len(first)
    assert len({m.seed for m in first}) == len(first)
    # An id names its place in the order, the game, the round and the seating.
    match = first[4]
    assert (
        match.match_id
        == f"05-{match.game.id}-r{match.round}-{match.players[0]}-vs-{match.players[1]}"
    )
