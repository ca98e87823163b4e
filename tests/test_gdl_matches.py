"""GDL games in matches: the rulesheet on `start`, kept in the transcript, replayed under it;
seats and standings for any number of roles."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from referee.cli import app
from referee.games.gdl.syntax import one_line
from referee.protocol import Start, parse, split_moves
from referee.records.transcript import Seat, Transcript, read_transcript
from referee.tournaments.schedule import groups, rotations
from referee.tournaments.standings import compute
from tests.support.paths import EXAMPLES

runner = CliRunner()


def test_start_carries_a_rulesheet_and_a_version_1_line_still_parses() -> None:
    with_rules = Start("m1", "tiny", "a", 1000, 100, "(role a) (<= (legal a (go (x 1))) (p))")
    assert parse(str(with_rules)) == with_rules
    plain = parse("start m1 ticblock xcplayer 1000 100")
    assert plain == Start("m1", "ticblock", "xcplayer", 1000, 100)
    assert str(plain) == "start m1 ticblock xcplayer 1000 100"


def test_moves_with_nested_terms_split_whole() -> None:
    line = "noop (mark 1 2) (move (cell 1 2) (cell (a b) 3)) swap"
    assert split_moves(line) == ["noop", "(mark 1 2)", "(move (cell 1 2) (cell (a b) 3))", "swap"]


def test_seatings_put_every_player_in_every_seat_equally() -> None:
    found = [seat for group in groups(["a", "b", "c", "d"], 3) for seat in rotations(group)]
    assert len(found) == 4 * 3
    assert len(set(found)) == len(found)
    for seat in range(3):
        assert sorted(s[seat] for s in found) == sorted("abcd" * 3)
    assert rotations(*groups(["a", "b"], 2)) == [("a", "b"), ("b", "a")]


def _three(goals: tuple[int, int, int], players: tuple[str, str, str]) -> Transcript:
    roles = ("red", "yellow", "blue")
    return Transcript(
        match_id="m",
        game="3p",
        seed=1,
        seats=[
            Seat(role, player, [player], None) for role, player in zip(roles, players, strict=True)
        ],
        clocks={},
        policy="forfeit",
        started_at="",
        ended_at="",
        start_times_ms={},
        steps=[],
        faults=[],
        end_reason="terminal",
        goals=dict(zip(roles, goals, strict=True)),
    )


def test_three_player_standings_rank_by_goal_and_count_results_per_pair() -> None:
    standings = compute(
        [_three((100, 50, 0), ("ann", "bob", "cy")), _three((0, 50, 100), ("ann", "bob", "cy"))]
    )
    by_name = {r.player: r for r in standings.overall}
    # bob's 50 beats a 0 and loses to a 100 in each match.
    assert (by_name["bob"].wins, by_name["bob"].draws, by_name["bob"].losses) == (2, 0, 2)
    assert (by_name["ann"].wins, by_name["ann"].losses, by_name["ann"].matches) == (2, 2, 2)
    assert by_name["ann"].average_goal == 50
    assert standings.head_to_head["ann"]["cy"].wins == 1
    assert standings.head_to_head["ann"]["bob"].losses == 1
    assert [r.player for r in standings.overall] == ["ann", "bob", "cy"]
    lopsided = compute([_three((90, 80, 0), ("ann", "bob", "cy"))] * 2)
    # Goals rank a game of three: bob, second in every match, above cy who was last.
    assert [r.player for r in lopsided.overall] == ["ann", "bob", "cy"]


def test_a_gdl_match_keeps_its_rules_and_replays_under_them(tmp_path: Path) -> None:
    rules = tmp_path / "ttt.kif"
    shutil.copy(EXAMPLES / "tictactoe.kif", rules)
    out = tmp_path / "match.json"
    result = runner.invoke(
        app,
        [
            "play",
            str(rules),
            "-p",
            "xplayer=mcts",
            "-p",
            "oplayer=random",
            "--play-clock",
            "300",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    transcript = read_transcript(out)
    assert transcript.game == "ttt"
    assert transcript.rulesheet is not None
    assert transcript.rulesheet.text == rules.read_text()
    assert transcript.rulesheet.path == str(rules)
    verified = runner.invoke(app, ["replay", "--verify", str(out)])
    assert verified.exit_code == 0, verified.output
    assert "note" not in verified.output

    rules.write_text(rules.read_text().replace("(role oplayer)", "(role oplayer)\n; edited"))
    changed = runner.invoke(app, ["replay", "--verify", str(out)])
    assert changed.exit_code == 0, changed.output
    assert "verified" in changed.output
    assert f"{rules} has changed since the match" in changed.output
    data = json.loads(runner.invoke(app, ["replay", "--verify", "--json", str(out)]).output)
    assert "has changed" in data["note"]


def test_the_mcts_sample_player_learns_the_rules_from_start() -> None:
    rules = (EXAMPLES / "tictactoe.kif").read_text()
    start = Start("m1", "tictactoe", "xplayer", 10_000, 200, one_line(rules))
    assert "\n" not in str(start) and ";" not in str(start)
    lines = f"{start}\ngo 1 200 (mark 1 1) (mark 2 2)\nmoves 1 (mark 2 2) noop\nquit\n"
    done = subprocess.run(
        [sys.executable, "-m", "referee.players.programs.mcts_player"],
        input=lines,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.splitlines()[0] == "ready"
    assert done.stdout.splitlines()[1].startswith("(mark ")


COIN = """
    (role random) (role guesser)
    (init (round 0))
    (<= (legal random (flip ?c)) (true (round 0)) (side ?c))
    (<= (legal guesser (guess ?c)) (true (round 0)) (side ?c))
    (side heads) (side tails)
    (<= (next (coin ?c)) (does random (flip ?c)))
    (<= (next (said ?c)) (does guesser (guess ?c)))
    (<= (next done) (true (round 0)))
    (<= terminal (true done))
    (<= (goal guesser 100) (true (coin ?c)) (true (said ?c)))
    (<= (goal guesser 0) (not (goal guesser 100)))
    (<= (goal random 0) (true done))
"""


@pytest.mark.slow
def test_the_referee_plays_the_random_role_uniformly(tmp_path: Path) -> None:
    rules = tmp_path / "coin.kif"
    rules.write_text(COIN)
    flips = set()
    for number in range(12):
        out = tmp_path / f"m{number}.json"
        result = runner.invoke(app, ["play", str(rules), "-p", "guesser=random", "--out", str(out)])
        assert result.exit_code == 0, result.output
        transcript = read_transcript(out)
        assert transcript.seats[0].player == "random (referee)"
        flips.add(transcript.steps[0].moves["random"])
        assert runner.invoke(app, ["replay", "--verify", str(out)]).exit_code == 0
    assert flips == {"(flip heads)", "(flip tails)"}
    refused = runner.invoke(app, ["play", str(rules), "-p", "random=random", "-p", "guesser=mcts"])
    assert refused.exit_code == 2
    assert "the referee plays role random" in refused.output


def test_a_tournament_seats_players_only_in_the_competing_roles(tmp_path: Path) -> None:
    (tmp_path / "coin.kif").write_text(COIN)
    config = tmp_path / "coin.yaml"
    config.write_text(
        "name: coin\nrounds: 2\ngames: [coin.kif]\n"
        "players:\n  - {name: a, command: random}\n  - {name: b, command: random}\n"
    )
    result = runner.invoke(app, ["tournament", str(config)])
    assert result.exit_code == 0, result.output
    table = json.loads(
        runner.invoke(app, ["standings", str(tmp_path / "results" / "coin"), "--json"]).output
    )
    assert table["matches"] == 4
    assert sorted(row["player"] for row in table["overall"]) == ["a", "b"]


# Answers the first legal move as a person might type it: without its outer parentheses.
BARE_MOVES = """
import re
import sys
for line in sys.stdin:
    words = line.split()
    if words[:1] == ["start"]:
        print("ready", flush=True)
    elif words[:1] == ["go"]:
        first = re.match(r"\\s*(\\([^()]*\\)|\\S+)", line.split(maxsplit=3)[3])[1]
        print(first.strip("()"), flush=True)
"""


def test_a_gdl_game_takes_a_move_without_its_outer_parentheses(tmp_path: Path) -> None:
    (tmp_path / "bots").mkdir()
    bot = tmp_path / "bots" / "bare.py"  # a directory of its own, which its jail may read
    bot.write_text(BARE_MOVES)
    out = tmp_path / "match.json"
    result = runner.invoke(
        app,
        [
            "play",
            str(EXAMPLES / "tictactoe.kif"),
            "-p",
            f"xplayer={sys.executable} {bot}",
            "-p",
            "oplayer=random",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    transcript = read_transcript(out)
    assert transcript.faults == []
    # Its first legal move is (mark 1 1) at the start, sent as `mark 1 1`.
    marks = [step.moves["xplayer"] for step in transcript.steps]
    assert marks[0] == "(mark 1 1)"
    assert all(move == "noop" or move.startswith("(mark ") for move in marks)
