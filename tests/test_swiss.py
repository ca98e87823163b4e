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
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from referee.cli import app
from referee.cli.present import round_line
from referee.records.transcript import tournament_match_id
from referee.tournaments.formats import Format
from referee.tournaments.standings import Standings
from referee.tournaments.standings_tables import render
from referee.tournaments.swiss import (
    FIRST,
    SECOND,
    Paired,
    PairResult,
    Past,
    Round,
    SwissStandings,
    Tiebreak,
    pair,
    read_rounds,
    standings,
    table,
)
from referee.tournaments.swiss_tables import crosstable_rows, pair_text
from tests.support.paths import ROOT
from tests.support.swiss_reference import play_round
from tests.support.tournaments import result

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


# A Swiss of five players, one game a pairing, three rounds, worked by hand (1: a win for
# the first named, 0.5: a draw):
#   round 1: a-1 1-0 b-2, c-3 0.5 d-4, bye e-5
#   round 2: a-1 1-0 c-3, e-5 1-0 b-2, bye d-4
#   round 3: e-5 0.5 a-1, b-2 0-1 d-4, bye c-3
# Scores: a-1 2.5, b-2 0, c-3 1.5 (a bye is the pairing's 1 point), d-4 2.5, e-5 2.5.
ROUNDS = [
    Round(1, (("a-1", "b-2"), ("c-3", "d-4")), "e-5"),
    Round(2, (("a-1", "c-3"), ("e-5", "b-2")), "d-4"),
    Round(3, (("e-5", "a-1"), ("b-2", "d-4")), "c-3"),
]
GOALS = {1.0: (100, 0), 0.5: (50, 50), 0.0: (0, 100)}
FIRSTS = [[1.0, 0.5], [1.0, 1.0], [0.5, 0.0]]


def hand_swiss(tiebreaks: tuple[Tiebreak, ...]) -> SwissStandings:
    played = [
        replace(
            result("quad", a, b, GOALS[FIRSTS[r.number - 1][index]]),
            match_id=tournament_match_id("quad", r.number, (a, b)),
        )
        for r in ROUNDS
        for index, (a, b) in enumerate(r.pairs)
    ]
    return standings(Paired(1, tuple(ROUNDS)), played, {}, tiebreaks)


def test_buchholz_its_cut_1_and_median_by_hand() -> None:
    swiss = hand_swiss((Tiebreak.BUCHHOLZ, Tiebreak.SONNEBORN_BERGER))
    rows = {row.player: row for row in swiss.rows}
    # Each round's opponent's score; a round not played (a bye), the player's own:
    #   a-1: b-2 0, c-3 1.5, e-5 2.5         b-2: a-1 2.5, e-5 2.5, d-4 2.5
    #   c-3: d-4 2.5, a-1 2.5, bye 1.5       d-4: c-3 1.5, bye 2.5, b-2 0
    #   e-5: bye 2.5, b-2 0, a-1 2.5
    # Buchholz: their sum; Cut-1 less the lowest; median less the highest and the lowest.
    expected = {
        "a-1": (4, 4, 1.5),
        "b-2": (7.5, 5, 2.5),
        "c-3": (6.5, 5, 2.5),
        "d-4": (4, 4, 1.5),
        "e-5": (5, 5, 2.5),
    }
    found = {
        name: (row.buchholz, row.buchholz_cut_1, row.median_buchholz) for name, row in rows.items()
    }
    assert found == expected
    # Sonneborn-Berger: a-1 1 * 0 + 1 * 1.5 + 0.5 * 2.5; d-4 0.5 * 1.5 + 1 * 0.
    assert (rows["a-1"].sonneborn_berger, rows["d-4"].sonneborn_berger) == (2.75, 0.75)
    # 2.5 points each: e-5 on Buchholz, then a-1 over d-4 on Sonneborn-Berger.
    assert [row.player for row in swiss.rows] == ["e-5", "a-1", "d-4", "c-3", "b-2"]
    # Ranked by the median Buchholz alone: a-1 and d-4 stay equal, and the name decides.
    median = hand_swiss((Tiebreak.MEDIAN_BUCHHOLZ,))
    assert [row.player for row in median.rows][:3] == ["e-5", "a-1", "d-4"]


def test_the_tie_breaks_chosen_decide_the_order() -> None:
    past = Past(rounds=3)
    scores = {"x": 2, "y": 2, "p": 0, "q": 3, "r": 3, "s": 2, "t": 2, "u": 2.5}
    past.scores.update(scores)
    for number, (mine, yours) in enumerate([("p", "s"), ("q", "t"), ("r", "u")], start=1):
        past.opponents["x"][number] = mine
        past.opponents["y"][number] = yours
    # x met 0, 3, 3: Buchholz 6, Cut-1 6, median 3; y met 2, 2, 2.5: 6.5, 4.5, 2.
    by = {t: [row.player for row in table(past, ["x", "y"], {}, (t,))] for t in Tiebreak}
    assert by[Tiebreak.BUCHHOLZ] == ["y", "x"]
    assert by[Tiebreak.BUCHHOLZ_CUT_1] == by[Tiebreak.MEDIAN_BUCHHOLZ] == ["x", "y"]


def test_the_crosstable_gives_each_round_opponent_seat_and_points() -> None:
    swiss = hand_swiss((Tiebreak.BUCHHOLZ_CUT_1, Tiebreak.MEDIAN_BUCHHOLZ))
    # Ranked e-5 (Cut-1 5), a-1 and d-4 (Cut-1 4, median 1.5: by name), c-3, b-2.
    assert crosstable_rows(swiss) == [
        ["1", "e-5", "2.5", "bye 1", "#5 1st 1", "#2 1st 0.5"],
        ["2", "a-1", "2.5", "#5 1st 1", "#4 1st 1", "#1 2nd 0.5"],
        ["3", "d-4", "2.5", "#4 2nd 0.5", "bye 1", "#5 2nd 1"],
        ["4", "c-3", "1.5", "#3 1st 0.5", "#2 2nd 0", "bye 1"],
        ["5", "b-2", "0", "#2 2nd 0", "#1 2nd 0", "#3 1st 0"],
    ]
    cell = swiss.crosstable[1].rounds[0]
    assert cell is not None and cell.matches == ("quad-r1-a-1-vs-b-2",)
    text = render_swiss(swiss)
    assert "Bu Cut-1" in text and "median Bu" in text and "S-B" not in text
    crosstable = text.split("Crosstable\n", 1)[1].split("\n\nRounds", 1)[0]
    lines = crosstable.splitlines()
    assert lines[-7].split()[1:] == ["player", "score", "r1", "r2", "r3"]
    assert " ".join(lines[-4].split()) == "2 a-1 2.5 #5 1st 1 #4 1st 1 #1 2nd 0.5"


def render_swiss(swiss: SwissStandings) -> str:
    return render(Standings([], {}, {}, 0, swiss=swiss), Format.TABLE)


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
    path.write_text(path.read_text() + "tiebreaks: [buchholz-cut-1, median-buchholz]\n")
    result = runner.invoke(app, ["tournament", str(path), "--json"])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("round ")]
    assert [line.split(" paired")[0] for line in lines] == [f"round {n} of 4" for n in range(1, 5)]
    # Each says how long its pairing took.
    assert all(
        re.match(r"round \d of 4 paired in \d+(\.\d)? m?s: s\d\d vs s\d\d, ", line)
        for line in lines
    )
    # The bar names the round, not a leader on points, which the Swiss's table may not rank
    # first.
    assert ", round 4 of 4; ETA" in result.stderr and "leader" not in result.stderr
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
    assert swiss["tiebreaks"] == ["buchholz-cut-1", "median-buchholz"]
    keys = [(-r["score"], -r["buchholz_cut_1"], -r["median_buchholz"]) for r in table]
    assert keys == sorted(keys)
    scores = {row["player"]: row["score"] for row in table}
    for row in table:
        name = row["player"]
        # Each round's opponent's score; a bye's, the player's own.
        met = [
            next(
                (
                    scores[o]
                    for p in r["pairs"]
                    for o in p["players"]
                    if name in p["players"] and o != name
                ),
                row["score"],
            )
            for r in swiss["rounds"]
        ]
        assert row["buchholz"] == sum(met)
        assert row["buchholz_cut_1"] == sum(sorted(met)[1:])
        assert row["median_buchholz"] == sum(sorted(met)[1:-1])
    # The crosstable: each player's four rounds, its opponent and seat as the rounds say.
    crossed = {row["player"]: row["rounds"] for row in swiss["crosstable"]}
    assert [row["player"] for row in swiss["crosstable"]] == [row["player"] for row in table]
    for r in swiss["rounds"]:
        for p in r["pairs"]:
            (first, second), number = p["players"], r["round"] - 1
            assert crossed[first][number]["opponent"] == second
            assert (crossed[first][number]["seat"], crossed[second][number]["seat"]) == (1, 2)
            assert crossed[first][number]["points"] == p["points"][0]
        assert crossed[r["bye"]][r["round"] - 1]["opponent"] is None
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
    assert "Bu Cut-1" in standings.stdout and "Crosstable" in standings.stdout
    # The report shows the table and the rounds too.
    site = runner.invoke(
        app, ["report", str(tmp_path / "results" / "swiss"), "--out", str(tmp_path / "site")]
    )
    assert site.exit_code == 0, site.output
    index = (tmp_path / "site" / "index.html").read_text()
    assert '<table class="swiss">' in index and index.count('<tr class="round">') == 4
    # Each game of the crosstable links to its match's page.
    crosstable = index.split('<table class="crosstable">', 1)[1].split("</table>", 1)[0]
    links = re.findall(r'href="matches/([^"]+)"', crosstable)
    assert len(links) == 2 * 12 and all((tmp_path / "site" / "matches" / f).exists() for f in links)


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
