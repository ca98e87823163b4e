"""Adjudication: `max_steps` ends a match that its game has not ended with the goals its
rules give there, the transcript says so and replay checks it; a game whose goals are not
defined before its end is refused when the config is read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from referee.cli import app
from referee.records.transcript import ADJUDICATED
from referee.records.verify import Outcome, verify_file
from referee.tournaments.config import load_config
from tests.support.tournaments import run, transcripts

runner = CliRunner()

# Matching pennies twenty times: red scores when the two coins shown last match, which the
# rules say in every state, not only at the end.
PENNIES = """
(role red) (role blue)
(init (shown red heads)) (init (shown blue tails)) (init (step 0))
(side heads) (side tails)
(<= (legal ?r (show ?s)) (role ?r) (side ?s))
(<= (next (shown ?r ?s)) (does ?r (show ?s)))
(<= (next (step ?n)) (true (step ?m)) (succ ?m ?n))
(<= same (true (shown red ?s)) (true (shown blue ?s)))
(<= (goal red 100) same) (<= (goal red 0) (not same))
(<= (goal blue 0) same) (<= (goal blue 100) (not same))
(<= terminal (true (step 20)))
""" + " ".join(f"(succ {n} {n + 1})" for n in range(20))
# The same game, its goals given only at its end.
LATE = PENNIES.replace("(not same))", "(not same) terminal)").replace("same) (", "same terminal) (")


def config(tmp_path: Path, games: str, extra: str = "") -> Path:
    (tmp_path / "pennies.kif").write_text(PENNIES)
    (tmp_path / "late.kif").write_text(LATE)
    path = tmp_path / "cup.yaml"
    path.write_text(
        f"name: cup\ngames: {games}\nmax_steps: 6\ntrace: true\n{extra}"
        "players:\n  - {name: a, command: random}\n  - {name: b, command: random}\n"
    )
    return path


@pytest.mark.usefixtures("every_transcript_verifies")
def test_a_match_past_max_steps_ends_there_with_the_goals_of_that_state(tmp_path: Path) -> None:
    path = config(tmp_path, "[pennies.kif]", "rounds: 3\n")
    result = runner.invoke(app, ["tournament", str(path)])
    assert result.exit_code == 0, result.output
    loaded = load_config(path)
    found = transcripts(loaded.output)
    assert len(found) == 6
    for transcript in found.values():
        assert transcript.end_reason == ADJUDICATED and transcript.max_steps == 6
        assert len(transcript.steps) == 6
        last = transcript.steps[-1].moves
        red = 100 if last["red"] == last["blue"] else 0
        assert transcript.goals == {"red": red, "blue": 100 - red}
    # The players are told the match is over by the rules, in the protocol's word for it.
    ends = [
        line for line in (loaded.output / "trace.log").read_text().splitlines() if " > end " in line
    ]
    assert len(ends) == 12 and all(line.endswith(" terminal") for line in ends)


REFUSED = {
    "a built-in game": (
        "[quad]",
        "",
        "max_steps: quad's rules give goals only at its end (referee rules quad)",
    ),
    "goals only at the end": (
        "[late.kif]",
        "",
        "max_steps: late does not define its goals before its end (at step 0: red has no goal",
    ),
    "within the opening": (
        "[pennies.kif]",
        "openings: 6\n",
        "max_steps: 6 steps end a match within its opening of 6",
    ),
}


@pytest.mark.parametrize("kind", list(REFUSED))
def test_max_steps_is_refused_in_one_line_where_it_cannot_hold(tmp_path: Path, kind: str) -> None:
    games, extra, message = REFUSED[kind]
    path = config(tmp_path, games, extra)
    result = runner.invoke(app, ["tournament", str(path)])
    assert result.exit_code == 2 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"referee: error: {path}:3: {message}"), line


def test_replay_checks_an_adjudicated_match_against_the_rules(tmp_path: Path) -> None:
    loaded = load_config(config(tmp_path, "[pennies.kif]"))
    run(loaded)
    path = sorted(loaded.output.glob("*.json"))[0]
    original = json.loads(path.read_text())
    del original["signature"]

    def verdict(change: dict) -> str | None:
        path.write_text(json.dumps({**original, **change}))
        found = verify_file(path)
        return None if found.outcome is Outcome.VERIFIED else found.problem

    assert verdict({}) is None
    goals = original["goals"]
    flipped = {role: 100 - value for role, value in goals.items()}
    assert verdict({"goals": flipped}) == (
        f"{path}: goals: red: {flipped['red']} is recorded, the rules give at step 6 {goals['red']}"
    )
    assert verdict({"steps": original["steps"][:5]}) == (
        f"{path}: end: adjudicated after step 5, but max_steps is 6"
    )
    assert verdict({"max_steps": 8}) == (
        f"{path}: end: adjudicated after step 6, but max_steps is 8"
    )
    assert verdict({"max_steps": 5}) == f"{path}: steps: 6 played, but max_steps is 5"
