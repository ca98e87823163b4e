"""Games of imperfect information (GDL-II): what each role sees, by the rules and by the
project's native engines, which must agree."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from referee.cli import app
from referee.errors import RulesheetError
from referee.games import RULESHEETS, GdlGame, get_game, load_text
from referee.games.gdl.check import checked_rules
from referee.games.gdl.per_state import PerState
from referee.games.gdl.remote import DEFAULT_LIMITS, RemotePerState
from referee.games.gdl.syntax import parse_rulesheet
from referee.games.monty_hall import MontyHall
from referee.records.conformance import check_file, random_reference

MONTY_HALL = RULESHEETS / "monty-hall.kif"


def _references(tmp_path: Path, count: int) -> Path:
    path = tmp_path / "monty-hall.jsonl"
    lines = [json.dumps(random_reference(MontyHall(), seed)) for seed in range(count)]
    path.write_text("\n".join(lines) + "\n")
    return path


def _rulesheet() -> GdlGame:
    return load_text(MONTY_HALL.read_text(), str(MONTY_HALL))


def test_the_rulesheet_and_the_native_engine_agree_on_a_thousand_random_matches(
    tmp_path: Path,
) -> None:
    references = _references(tmp_path, 1000)
    lines = [json.loads(line) for line in references.read_text().splitlines()]
    # The matches reach every end: the candidate keeps or switches, and wins or loses.
    assert {line["final"]["goals"]["candidate"] for line in lines} == {0, 100}
    assert {line["steps"][2]["moves"]["candidate"] for line in lines} == {"noop", "switch"}
    rules = _rulesheet()
    assert rules.imperfect
    report = check_file(references, rules)
    assert report.games == 1000
    assert [str(m) for m in report.mismatches] == []


@pytest.mark.parametrize("where", ["per-state", "per-state in a child"])
def test_a_rulesheet_reasoned_one_state_at_a_time_says_the_same_percepts(
    tmp_path: Path, where: str
) -> None:
    text = MONTY_HALL.read_text()
    if where == "per-state":
        rules = checked_rules(parse_rulesheet(text, str(MONTY_HALL)), str(MONTY_HALL))
        reasoner: PerState | RemotePerState = PerState(rules, str(MONTY_HALL))
    else:
        reasoner = RemotePerState(text, str(MONTY_HALL), DEFAULT_LIMITS)
    game = GdlGame(reasoner, str(MONTY_HALL), text)
    try:
        assert game.imperfect
        report = check_file(_references(tmp_path, 40), game)
        assert report.games == 40
        assert [str(m) for m in report.mismatches] == []
    finally:
        game.close()


def test_a_percept_the_rules_do_not_give_is_a_mismatch_at_its_step_and_role(
    tmp_path: Path,
) -> None:
    record = random_reference(MontyHall(), 7)
    opened = record["steps"][1]["percepts"]["candidate"]
    record["steps"][1]["percepts"]["candidate"] = [*opened, "(car 1)"]
    path = tmp_path / "told.jsonl"
    path.write_text(json.dumps(record) + "\n")
    (mismatch,) = check_file(path, _rulesheet()).mismatches
    assert (mismatch.step, mismatch.role) == (2, "candidate")
    assert "percepts differ: missing (car 1); extra none" in str(mismatch)


def test_each_role_sees_what_the_rules_say_and_chance_nothing() -> None:
    game = _rulesheet()
    state = game.initial_state()
    hidden = ("(choose 1)", "(hide_car 2)")
    # Neither is told the other's move at the first step.
    assert game.percepts(state, hidden) == ((), ())
    state = game.next_state(state, hidden)
    assert game.legal_moves(state, 1) == ("(open_door 3)",)
    assert game.percepts(state, ("noop", "(open_door 3)")) == (("(opened 3)",), ())
    state = game.next_state(state, ("noop", "(open_door 3)"))
    assert game.percepts(state, ("switch", "noop")) == (("(car 2)",), ())
    state = game.next_state(state, ("switch", "noop"))
    assert game.is_terminal(state) and game.goals(state) == (100, 0)


def test_a_game_of_perfect_information_tells_no_percepts() -> None:
    game = get_game("ticblock")
    assert not game.imperfect
    state = game.initial_state()
    assert game.percepts(state, ("(mark 2 2)", "noop")) == ((), ())
    gdl = load_text(
        "(role a) (init p) (legal a go) (<= (next q) (does a go)) (<= terminal (true q))"
        " (goal a 100)",
        "one.kif",
    )
    assert not gdl.imperfect
    assert gdl.percepts(gdl.initial_state(), ("go",)) == ((),)


def test_a_percept_rule_of_the_wrong_arity_is_refused_with_its_line() -> None:
    with pytest.raises(RulesheetError) as error:
        load_text("(role a)\n(init p)\n(<= (sees a) (true p))\n", "bad.kif")
    assert error.value.line == 3
    assert "'sees' takes 2 argument(s)" in str(error.value)


def test_a_match_of_a_game_of_imperfect_information_is_refused_in_one_line(
    tmp_path: Path,
) -> None:
    # Until a seat can be told only its percepts, it would be told every move.
    result = CliRunner().invoke(
        app, ["play", str(MONTY_HALL), "-p", "candidate=random", "--out", str(tmp_path / "m.json")]
    )
    assert result.exit_code == 2, result.output
    (line,) = [line for line in result.stderr.splitlines() if "error" in line]
    assert line.startswith(f"referee: error: {MONTY_HALL}: a game of imperfect information")
    assert not (tmp_path / "m.json").exists()
