"""The Swiss: each round pairs near scores that have not met, with seats balanced and byes
to the lowest scores; a round is paired once and kept, so that a stopped run goes on with
the same pairings; the table ranks by score and its tie-breaks."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from referee.cli import app
from referee.cli.present import round_line
from referee.tournaments.standings_tables import pair_text
from referee.tournaments.swiss import FIRST, SECOND, PairResult, Past, Round, pair, read_rounds
from tests.support.paths import ROOT
from tests.support.swiss_reference import play_round

runner = CliRunner()
LINE_BOT = ROOT / "benchmarks" / "bots" / "line_bot.py"


def test_round_one_pairs_the_top_half_with_the_bottom_half() -> None:
    field = [f"p{n}" for n in range(1, 9)]
    played = pair(1, field, Past(), 2)
    assert played.pairs == (("p1", "p5"), ("p2", "p6"), ("p3", "p7"), ("p4", "p8"))
    assert played.bye is None


def test_the_next_round_pairs_equal_scores() -> None:
    field = [f"p{n}" for n in range(1, 9)]
    past = Past()
    first = pair(1, field, past, 1)
    for winner, loser in first.pairs:  # the first seat wins every game
        past.met.add(frozenset((winner, loser)))
        past.seats[winner].append(FIRST)
        past.seats[loser].append(SECOND)
        past.scores[winner] += 1
    second = pair(2, field, past, 1)
    winners = {a for a, _ in first.pairs}
    for a, b in second.pairs:
        assert (a in winners) == (b in winners), second.pairs


@pytest.mark.parametrize("games", [1, 2])
@pytest.mark.parametrize("size", [9, 16])
def test_seven_rounds_never_repeat_a_pair_and_balance_seats(size: int, games: int) -> None:
    field = [f"p{n}" for n in range(1, size + 1)]
    for seed in range(5):
        rng, past = random.Random(seed), Past()
        byes: list[str] = []
        for number in range(1, 8):
            played = pair(number, field, past, games)
            seated = [name for p in played.pairs for name in p]
            assert sorted(seated + ([played.bye] if played.bye else [])) == sorted(field)
            assert not {frozenset(p) for p in played.pairs} & past.met, (seed, number)
            if played.bye:
                # The lowest score of those who have not had one.
                lowest = min(past.scores[name] for name in field if name not in byes)
                assert played.bye not in byes and past.scores[played.bye] == lowest
                byes.append(played.bye)
            play_round(played, past, games, rng)
        for name in field:
            # Two games a pairing: one in each seat. One: never two more of one seat.
            seats = past.seats[name]
            most = 1 if games == 2 else 2
            assert abs(seats.count(FIRST) - seats.count(SECOND)) <= most, (seed, name, seats)
            runs = ["".join(map(str, seats[i : i + 3])) for i in range(len(seats) - 2)]
            assert "000" not in runs and "111" not in runs, (seed, name, seats)


def test_a_field_that_has_met_everyone_meets_again_rather_than_not_play() -> None:
    field = ["a", "b", "c", "d"]
    past = Past()
    rng = random.Random(1)
    for number in range(1, 5):
        played = pair(number, field, past, 2)
        assert len(played.pairs) == 2
        play_round(played, past, 2, rng)
    # Three rounds meet every pair once; the fourth must repeat one.
    assert len(past.met) == 6


def test_pairings_of_hyphenated_names_read_one_way() -> None:
    pairs = (("mcts-a-c-1", "mcts-b-c-2"), ("r-1", "r-2-x"))
    line = round_line(Round(1, pairs, "odd-one"), 5, 0.004)
    assert (
        line == "round 1 of 5 paired in 4 ms: mcts-a-c-1 vs mcts-b-c-2, r-1 vs r-2-x; bye: odd-one"
    )
    # Names hold no space or comma: the pairs and their players come back as they were.
    listed = line.split(": ", 1)[1].split("; bye: ")[0]
    assert tuple(tuple(p.split(" vs ")) for p in listed.split(", ")) == pairs
    played = PairResult("mcts-a-c-1", "mcts-b-c-2", (0.0, 2.0), 2)
    assert pair_text(played) == "mcts-a-c-1 vs mcts-b-c-2 0-2"


def swiss_config(tmp_path: Path, players: int, rounds: int, games: int, seed: int = 3) -> Path:
    entries = "".join(
        f"  - {{name: s{n:02d}, command: {sys.executable} {LINE_BOT} {n / (players - 1):.3f}}}\n"
        for n in range(players)
    )
    path = tmp_path / "swiss.yaml"
    path.write_text(
        f"name: swiss\nformat: swiss\ngames: [double-tictactoe]\nrounds: {rounds}\n"
        f"games_per_pairing: {games}\nseed: {seed}\nconcurrency: 2\nplay_clock: 2000\n"
        f"players:\n{entries}"
    )
    return path


@pytest.mark.usefixtures("every_transcript_verifies")
def test_a_swiss_plays_its_rounds_and_ranks_by_score_and_tie_breaks(tmp_path: Path) -> None:
    path = swiss_config(tmp_path, players=7, rounds=4, games=1)
    result = runner.invoke(app, ["tournament", str(path), "--json"])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("round ")]
    assert [line.split(" paired")[0] for line in lines] == [f"round {n} of 4" for n in range(1, 5)]
    # Each says how long its pairing took.
    assert all(
        re.match(r"round \d of 4 paired in \d+(\.\d)? m?s: s\d\d vs s\d\d, ", line)
        for line in lines
    )
    stored = read_rounds(tmp_path / "results" / "swiss")
    assert stored is not None and stored.games_per_pairing == 1 and len(stored.rounds) == 4
    rounds = stored.rounds
    met = [frozenset(p) for r in rounds for p in r.pairs]
    assert len(met) == len(set(met)) == 4 * 3
    assert len({r.bye for r in rounds}) == 4
    swiss = json.loads(result.stdout)["swiss"]
    table = swiss["table"]
    # Every game is a point shared; a bye is a point.
    assert sum(row["score"] for row in table) == 4 * 3 + 4
    keys = [(-r["score"], -r["buchholz"], -r["sonneborn_berger"]) for r in table]
    assert keys == sorted(keys)
    scores = {row["player"]: row["score"] for row in table}
    for row in table:
        opponents = {
            other
            for r in swiss["rounds"]
            for p in r["pairs"]
            if row["player"] in p["players"]
            for other in p["players"]
            if other != row["player"]
        }
        assert row["buchholz"] == sum(scores[o] for o in opponents)
    seats = Counter()
    for transcript in (tmp_path / "results" / "swiss").glob("*.json"):
        data = json.loads(transcript.read_text())
        seats[data["seats"][0]["player"]] += 1
        seats[data["seats"][1]["player"]] -= 1
    # One game a pairing: no player has one seat two times more than the other.
    assert all(abs(balance) <= 2 for balance in seats.values()), seats
    standings = runner.invoke(app, ["standings", str(tmp_path / "results" / "swiss")])
    assert standings.exit_code == 0
    assert "Swiss: 4 rounds (12 matches)" in standings.stdout
    assert "round 1: s00 vs " in standings.stdout
    # The report shows the table and the rounds too.
    site = runner.invoke(
        app, ["report", str(tmp_path / "results" / "swiss"), "--out", str(tmp_path / "site")]
    )
    assert site.exit_code == 0, site.output
    index = (tmp_path / "site" / "index.html").read_text()
    assert '<table class="swiss">' in index and index.count('<tr class="round">') == 4


def test_kill_9_in_a_round_then_the_same_command_ends_as_an_uninterrupted_run(
    tmp_path: Path,
) -> None:
    whole, stopped = tmp_path / "whole", tmp_path / "stopped"
    for directory in (whole, stopped):
        directory.mkdir()
        swiss_config(directory, players=8, rounds=5, games=2)
    command = [sys.executable, "-m", "referee", "tournament", "swiss.yaml", "--json"]
    uninterrupted = subprocess.run(command, cwd=whole, capture_output=True, text=True, check=True)
    # Killed as soon as round 4 is paired: in round 4, a round paired and not yet played.
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    process = subprocess.Popen(command, cwd=stopped, **quiet)
    results = stopped / "results" / "swiss"
    while process.poll() is None:
        if (results / "swiss.rounds").exists():
            paired = read_rounds(results)
            if paired is not None and len(paired.rounds) >= 4:
                process.kill()  # SIGKILL
                break
        time.sleep(0.01)
    assert process.wait() == -9, "the run ended before it could be killed"
    assert len(list(results.glob("*.json"))) < 5 * 4 * 2
    again = subprocess.run(command, cwd=stopped, capture_output=True, text=True, check=True)
    assert read_rounds(results) == read_rounds(whole / "results" / "swiss")
    assert json.loads(again.stdout)["swiss"] == json.loads(uninterrupted.stdout)["swiss"]


def test_a_changed_field_is_paired_from_the_next_round(tmp_path: Path) -> None:
    path = swiss_config(tmp_path, players=6, rounds=2, games=2)
    first = runner.invoke(app, ["tournament", str(path)])
    assert first.exit_code == 0, first.output
    # Three rounds now; s06 joins and s05 leaves.
    text = path.read_text().replace("rounds: 2", "rounds: 3")
    text = text.replace("s05", "s06").replace(f"{5 / 5:.3f}", "0.500")
    path.write_text(text)
    again = runner.invoke(app, ["tournament", str(path), "--json"])
    assert again.exit_code == 0, again.output
    assert "player s06: new in the field; paired from round 3, with no score" in again.stderr
    stored = read_rounds(tmp_path / "results" / "swiss")
    assert stored is not None
    third = stored.rounds[2]
    assert "s06" in {name for pair in third.pairs for name in pair}
    assert "s05" not in {name for pair in third.pairs for name in pair} and third.bye is None
    swiss = json.loads(again.stdout)["swiss"]
    table = {row["player"]: row for row in swiss["table"]}
    assert table["s06"]["games"] == 2 and "s05" not in table
    # Its pairs of the rounds before are byes for its opponents, its matches set aside.
    left = [p for r in swiss["rounds"] for p in r["pairs"] if p["left"] == "s05"]
    assert len(left) == 2 and all(
        table[o]["byes"] >= 1 for p in left for o in p["players"] if o != "s05"
    )
    standings = runner.invoke(app, ["standings", str(tmp_path / "results" / "swiss")])
    assert "(s05 left: a bye)" in standings.stdout


def test_a_withdrawn_player_is_not_paired_again(tmp_path: Path) -> None:
    path = swiss_config(tmp_path, players=5, rounds=4, games=2)
    path.write_text(
        path.read_text().replace(
            "players:\n", "withdraw_after: 2\nplayers:\n  - {name: dead, command: 'false'}\n"
        )
    )
    result = runner.invoke(app, ["tournament", str(path), "--json"])
    assert result.exit_code == 0, result.output
    assert "dead withdrawn after 2 matches in a row" in result.stderr
    stored = read_rounds(tmp_path / "results" / "swiss")
    assert stored is not None
    # Paired in round 1, where it failed both its games, and never again.
    played = [r for r in stored.rounds if "dead" in {n for p in r.pairs for n in p} | {r.bye}]
    assert [r.number for r in played] == [1]
