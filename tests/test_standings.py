"""Standings from hand-made transcripts: results, score, Elo, faults, head to head, formats."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from referee.cli import app
from referee.errors import FaultKind
from referee.games import get_game
from referee.records.transcript import Fault, Seat, Transcript, write_transcript
from referee.tournaments.standings import Format, compute, elo_difference, elo_with_margin, render

runner = CliRunner()


def result(
    game: str,
    first: str,
    second: str,
    goals: tuple[int, int] | None,
    faults: tuple[tuple[int, str], ...] = (),
    reason: str = "terminal",
) -> Transcript:
    """A transcript of `first` against `second` in the game's role order, with these goals."""
    roles = get_game(game).roles
    return Transcript(
        match_id=f"{game}-{first}-{second}",
        game=game,
        seed=1,
        seats=[Seat(roles[0], first, ["x"], None), Seat(roles[1], second, ["y"], None)],
        clocks={"start_ms": 1000, "play_ms": 100, "time_bank_ms": 0},
        policy="forfeit",
        started_at="2026-11-21T00:00:00.000Z",
        ended_at="2026-11-21T00:00:01.000Z",
        start_times_ms={},
        steps=[],
        faults=[Fault(step, roles[role], kind, "") for role, (step, kind) in faults],
        end_reason=reason,
        goals=dict(zip(roles, goals, strict=True)) if goals else None,
    )


def by_player(records) -> dict:
    return {record.player: record for record in records}


RESULTS = [
    result("quad", "ann", "bob", (100, 0)),
    result("quad", "bob", "ann", (50, 50)),
    result("ticblock", "ann", "bob", (25, 75)),
    result("ticblock", "bob", "ann", (100, 0), faults=((1, (3, FaultKind.TIMEOUT)),)),
    result("quad", "ann", "cat", (0, 100), faults=((0, (2, FaultKind.ILLEGAL)),), reason="forfeit"),
    result("quad", "cat", "ann", None, reason="aborted"),
]


def test_wins_draws_losses_goals_and_faults_per_player() -> None:
    standings = compute(RESULTS)
    assert standings.matches == 5  # the aborted match does not count
    ann, bob, cat = (by_player(standings.overall)[name] for name in ("ann", "bob", "cat"))
    assert (ann.matches, ann.wins, ann.draws, ann.losses) == (5, 1, 1, 3)
    assert ann.average_goal == (100 + 50 + 25 + 0 + 0) / 5
    assert ann.score == pytest.approx(1.5 / 5)
    assert dict(ann.faults) == {FaultKind.TIMEOUT: 1, FaultKind.ILLEGAL: 1}
    assert (bob.wins, bob.draws, bob.losses) == (2, 1, 1)
    assert (cat.wins, cat.losses, cat.score) == (1, 0, 1.0)
    assert [r.player for r in standings.overall] == ["cat", "bob", "ann"]


def test_a_table_per_game_and_head_to_head() -> None:
    standings = compute(RESULTS)
    assert list(standings.by_game) == ["quad", "ticblock"]
    quad = by_player(standings.by_game["quad"])
    assert (quad["ann"].wins, quad["ann"].draws, quad["ann"].losses) == (1, 1, 1)
    ticblock = by_player(standings.by_game["ticblock"])
    assert (ticblock["bob"].wins, ticblock["bob"].matches) == (2, 2)
    ann_bob = standings.head_to_head["ann"]["bob"]
    assert (ann_bob.wins, ann_bob.draws, ann_bob.losses) == (1, 1, 2)
    bob_ann = standings.head_to_head["bob"]["ann"]
    assert (bob_ann.wins, bob_ann.draws, bob_ann.losses) == (2, 1, 1)
    assert "cat" not in standings.head_to_head["bob"]


def test_elo_from_the_score_with_a_95_percent_margin() -> None:
    # Worked by hand: a score of 3/4 is 400 * log10(3) = 190.8 Elo.
    assert elo_difference(0.75) == pytest.approx(190.85, abs=0.01)
    assert elo_difference(0.5) == 0
    assert elo_difference(1.0) == math.inf and elo_difference(0.0) == -math.inf
    # 6 wins, 2 draws, 2 losses: score 0.7, per-match deviation 0.4, standard error 0.1265,
    # score interval 0.4521..0.9479, Elo interval -33.4..+504.0.
    elo, margin = elo_with_margin(6, 2, 2)
    assert elo == pytest.approx(147.2, abs=0.1)
    assert margin == pytest.approx(268.7, abs=0.2)
    assert elo_with_margin(3, 0, 0) == (math.inf, math.inf)


def test_formats() -> None:
    standings = compute(RESULTS)
    table = render(standings, Format.TABLE)
    assert "Standings: all games (5 matches)" in table
    assert "1 timeout, 1 illegal" in table or "1 illegal, 1 timeout" in table
    markdown = render(standings, Format.MARKDOWN)
    assert "## quad" in markdown and "| cat " in markdown
    rows = list(csv.DictReader(io.StringIO(render(standings, Format.CSV))))
    assert {(row["game"], row["player"]) for row in rows} == {
        ("all", "ann"), ("all", "bob"), ("all", "cat"),
        ("quad", "ann"), ("quad", "bob"), ("quad", "cat"),
        ("ticblock", "ann"), ("ticblock", "bob"),
    }  # fmt: skip
    ann = next(row for row in rows if (row["game"], row["player"]) == ("all", "ann"))
    assert (ann["wins"], ann["losses"], ann["faults_timeout"], ann["faults_crash"]) == (
        "1", "3", "1", "0"
    )  # fmt: skip
    data = json.loads(render(standings, Format.JSON))
    assert data["matches"] == 5
    cat = data["overall"][0]
    assert (cat["player"], cat["score"], cat["elo"], cat["elo_margin"]) == ("cat", 1.0, None, None)
    assert data["head_to_head"]["ann"]["bob"]["losses"] == 2


def test_standings_command_reads_a_results_directory(tmp_path: Path) -> None:
    for transcript in RESULTS:
        write_transcript(tmp_path / f"{transcript.match_id}.json", transcript, None)
    result_ = runner.invoke(app, ["standings", str(tmp_path), "--json"])
    assert result_.exit_code == 0
    assert json.loads(result_.stdout)["matches"] == 5
    (tmp_path / "broken.json").write_text('{"schema": "referee-transcript", "schema_version": 1')
    result_ = runner.invoke(app, ["standings", str(tmp_path), "--format", "csv"])
    assert result_.exit_code == 1
    assert "broken.json: line 1 column" in result_.stderr
    assert result_.stdout.startswith("game,player,")


def test_standings_of_a_directory_that_is_not_there(tmp_path: Path) -> None:
    result_ = runner.invoke(app, ["standings", str(tmp_path / "nothing")])
    assert result_.exit_code == 2
    assert result_.stderr == f"referee: error: {tmp_path / 'nothing'}: no such results directory\n"
