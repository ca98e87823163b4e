"""The rule engines against the reference games, through the same code as the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from referee.cli import app
from referee.errors import ConformanceFileError
from referee.games import GAMES, as_gdl, builtin_with_rules, get_game, load_text
from referee.records.conformance import check_file
from tests.support.paths import CONFORMANCE, REFERENCE_FILES

runner = CliRunner()


def test_every_game_has_reference_games() -> None:
    names = {path.stem for path in REFERENCE_FILES}
    assert names == {"blocker-parallel", "ticblock", "hex-pie", "double-tictactoe", "quad"}


@pytest.mark.parametrize("path", REFERENCE_FILES, ids=lambda p: p.stem)
def test_reference_games_are_reproduced(path: Path) -> None:
    report = check_file(path)
    assert report.games == len([line for line in path.read_text().splitlines() if line.strip()])
    assert report.games > 0
    assert [str(m) for m in report.mismatches] == []


def test_cli_checks_all_reference_files() -> None:
    result = runner.invoke(app, ["conformance", *map(str, REFERENCE_FILES)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert len(lines) == len(REFERENCE_FILES)
    assert all(line.endswith("games checked, 0 mismatches") for line in lines)


def _first_game(name: str) -> dict:
    return json.loads((CONFORMANCE / f"{name}.jsonl").read_text().splitlines()[0])


def _write(tmp_path: Path, records: list[dict | str]) -> Path:
    path = tmp_path / "games.jsonl"
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_removed_legal_move_and_changed_goal_are_reported_precisely(tmp_path: Path) -> None:
    record = _first_game("ticblock")
    removed = record["steps"][2]["legal"]["xcplayer"].pop(0)
    goals = record["final"]["goals"]
    goals["obplayer"] = goals["obplayer"] + 25
    path = _write(tmp_path, [_first_game("ticblock"), record])

    result = runner.invoke(app, ["conformance", str(path)])

    assert result.exit_code == 1
    last = len(record["steps"])
    expected_goal = goals["obplayer"]
    actual_goal = expected_goal - 25
    assert result.output.splitlines() == [
        f"{path}:2: seed {record['seed']}, step 3, role xcplayer: legal moves differ: "
        f"missing none; extra {removed}",
        f"{path}:2: seed {record['seed']}, after step {last} (final), role obplayer: "
        f"goal expected {expected_goal}, got {actual_goal}",
        f"{path}: 2 games checked, 2 mismatches",
    ]


def test_added_legal_move_is_reported_as_missing(tmp_path: Path) -> None:
    record = _first_game("hex-pie")
    record["steps"][0]["legal"]["player2"].append("swap")
    report = check_file(_write(tmp_path, [record]))
    assert [(m.step, m.role, m.detail) for m in report.mismatches] == [
        (1, "player2", "legal moves differ: missing swap; extra none")
    ]


def test_game_that_goes_on_past_the_end_is_a_mismatch(tmp_path: Path) -> None:
    record = _first_game("double-tictactoe")
    record["steps"].append(record["steps"][-1])
    report = check_file(_write(tmp_path, [record]))
    assert len(report.mismatches) == 1
    assert report.mismatches[0].step == len(record["steps"])
    assert "terminal" in report.mismatches[0].detail


def test_unreplayable_move_stops_that_game(tmp_path: Path) -> None:
    record = _first_game("quad")
    record["steps"][0]["moves"]["x"] = "(mark r1 c1)"
    report = check_file(_write(tmp_path, [record]))
    assert len(report.mismatches) == 1
    assert "cannot replay" in report.mismatches[0].detail
    assert "(mark r1 c1)" in report.mismatches[0].detail


# Two roles that both play `go` twice; then the game ends with 50 each, unless a fault is
# added: blue with no legal move at step 2, or no goal at the end.
_TWO_STEPS = (
    "(role red) (role blue) (init (step 0)) (succ 0 1) (succ 1 2)"
    " (<= (next (step ?m)) (true (step ?n)) (succ ?n ?m)) (<= terminal (true (step 2)))"
    " (<= (legal red go) (role red)) (<= (goal red 50) (role red))"
)
_STEP = {"legal": {"red": ["go"], "blue": ["go"]}, "moves": {"red": "go", "blue": "go"}}


@pytest.mark.parametrize(
    ("faulty", "where"),
    [
        ("(<= (legal blue go) (true (step 0))) (<= (goal blue 50) (role blue))", "step 2"),
        ("(<= (legal blue go) (role blue))", "after step 2 (final)"),
    ],
    ids=["legal moves", "goals"],
)
def test_a_fault_of_the_rules_is_reported_at_its_step(
    tmp_path: Path, faulty: str, where: str
) -> None:
    game = load_text(f"{_TWO_STEPS} {faulty}", "faulty.kif")
    record = {
        "game": "faulty",
        "seed": 1,
        "steps": [_STEP, _STEP],
        "final": {"terminal": True, "goals": {"red": 50, "blue": 50}},
    }
    (mismatch,) = check_file(_write(tmp_path, [record]), game).mismatches
    assert str(mismatch).startswith(f"{tmp_path / 'games.jsonl'}:1: seed 1, {where}: "), mismatch
    assert "faulty: fault of the rules: blue has" in mismatch.detail


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda r: "{not json", "malformed JSON"),
        (lambda r: r | {"game": "chess"}, "unknown game 'chess'"),
        (lambda r: {k: v for k, v in r.items() if k != "final"}, "missing field 'final'"),
        (lambda r: {k: v for k, v in r.items() if k != "seed"}, "missing field 'seed'"),
        (lambda r: r | {"steps": {}}, "steps: expected a list"),
        (lambda r: r | {"final": {"terminal": True}}, "missing field 'final.goals'"),
        (
            lambda r: r | {"final": {"terminal": True, "goals": {"crosser": 50}}},
            "final.goals: missing role 'blocker'",
        ),
        (
            lambda r: r | {"final": {"terminal": 1, "goals": r["final"]["goals"]}},
            "final.terminal: expected true or false",
        ),
        (
            lambda r: r | {"steps": [{"legal": r["steps"][0]["legal"]}]},
            "missing field 'steps[0].moves'",
        ),
        (lambda r: [r], "expected one JSON object per line"),
    ],
)
def test_malformed_reference_line_is_an_error_with_file_and_line(
    tmp_path: Path, mutate, message: str
) -> None:
    record = _first_game("blocker-parallel")
    path = _write(tmp_path, [_first_game("blocker-parallel"), mutate(record)])

    with pytest.raises(ConformanceFileError) as raised:
        check_file(path)
    assert str(raised.value).startswith(f"{path}:2: {message}")

    result = runner.invoke(app, ["conformance", str(path)])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [result.stderr.strip()]
    assert result.stderr.startswith(f"referee: error: {path}:2: {message}")


def test_missing_file_is_an_error_and_other_files_are_still_checked(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["conformance", str(tmp_path / "nope.jsonl"), str(REFERENCE_FILES[0])]
    )
    assert result.exit_code == 2
    assert "nope.jsonl: cannot read" in result.stderr
    assert result.stdout.strip().endswith("games checked, 0 mismatches")


def test_json_output_lists_mismatches(tmp_path: Path) -> None:
    record = _first_game("quad")
    record["final"]["goals"]["x"] = 7
    result = runner.invoke(app, ["conformance", "--json", str(_write(tmp_path, [record]))])
    assert result.exit_code == 1
    (report,) = json.loads(result.stdout)
    assert report["games"] == 1
    (mismatch,) = report["mismatches"]
    assert mismatch["role"] == "x" and mismatch["final"] is True
    assert mismatch["detail"].startswith("goal expected 7, got ")


@pytest.mark.parametrize("path", REFERENCE_FILES, ids=lambda p: p.stem)
def test_the_packaged_gdl_rules_of_a_built_in_game_reproduce_its_reference_games(
    path: Path,
) -> None:
    # What a GGP player is sent as the game's rules must be the game the referee judges.
    gdl = as_gdl(get_game(path.stem))
    assert gdl.id == path.stem
    report = check_file(path, gdl)
    assert report.games > 0
    assert [str(m) for m in report.mismatches] == []


def test_the_built_in_game_is_recognised_by_its_rules_alone() -> None:
    for game in GAMES.values():
        assert builtin_with_rules(as_gdl(game).one_line) is game
    assert builtin_with_rules("(role a)") is None
