"""The round-robin schedule: every pair, game, seating and round once, in a seeded order."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from referee.tournaments.config import TournamentConfig, load_config
from referee.tournaments.schedule import schedule as round_robin


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


def test_order_follows_the_seed_and_a_pair_shares_its_seed(tmp_path: Path) -> None:
    first = round_robin(config(tmp_path, seed=1))
    again = round_robin(config(tmp_path, seed=1))
    other = round_robin(config(tmp_path, seed=2))
    assert first == again
    assert [m.match_id for m in first] != [m.match_id for m in other]
    assert len({m.match_id for m in first}) == len(first)
    # The two seatings of a pair follow each other and share a seed; pairs differ.
    for one, two in zip(first[::2], first[1::2], strict=True):
        assert (one.game, one.round, one.players) == (two.game, two.round, two.players[::-1])
        assert one.seed == two.seed
    assert len({m.seed for m in first}) == len(first) // 2
    # An id names the game, the round and the seating, and nothing that depends on the field.
    match = first[4]
    assert (
        match.match_id == f"{match.game.id}-r{match.round}-{match.players[0]}-vs-{match.players[1]}"
    )


def test_a_match_keeps_its_id_and_seed_when_the_field_grows(tmp_path: Path) -> None:
    small = {m.match_id: m.seed for m in round_robin(config(tmp_path, seed=1, players=3))}
    large = {m.match_id: m.seed for m in round_robin(config(tmp_path, seed=1, players=5))}
    assert small.items() <= large.items()
    assert len(large) == 10 * 2 * 5


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cup.yaml"
    path.write_text(text)
    return path


def test_a_gauntlet_plays_each_challenger_against_every_other_player(tmp_path: Path) -> None:
    entries = "".join(f"  - {{name: {n}, command: random}}\n" for n in "ABxyz")
    path = write(
        tmp_path,
        f"name: g\nformat: gauntlet\nchallengers: 2\nrounds: 2\ngames: [quad]\nplayers:\n{entries}",
    )
    schedule = round_robin(load_config(path))
    pairs = Counter(frozenset(m.players) for m in schedule)
    expected = {frozenset((c, r)) for c in "AB" for r in "xyz"}
    assert set(pairs) == expected and set(pairs.values()) == {4}  # 2 seatings x 2 rounds
    assert len(schedule) == 2 * 3 * 2 * 2


def test_an_sprt_plays_pairs_of_its_two_players_up_to_its_limit(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "name: s\nformat: sprt\nsprt: {elo0: 0, elo1: 10}\nrounds: 7\ngames: [ticblock]\n"
        "players:\n  - {name: new, command: random}\n  - {name: old, command: random}\n",
    )
    loaded = load_config(path)
    assert loaded.sprt is not None and (loaded.sprt.alpha, loaded.sprt.beta) == (0.05, 0.05)
    schedule = round_robin(loaded)
    assert len(schedule) == 14
    assert [m.round for m in schedule] == [r for r in range(1, 8) for _ in range(2)]
