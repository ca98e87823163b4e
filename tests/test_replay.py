"""Replaying and verifying transcripts: real matches verify, every kind of tampering is caught."""

from __future__ import annotations

import asyncio
import copy
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from referee.cli import app
from referee.cli.present import result_line
from referee.clock import Clocks
from referee.errors import TranscriptError
from referee.games import get_game
from referee.match import MatchSetup, play_fresh
from referee.players.base import Player, PlayerSpec
from referee.players.builtin import PROGRAMS, player_spec
from referee.players.human import HumanPlayer
from referee.players.process import ProgramPlayer
from referee.policy import Policy
from referee.records.signing import results_key
from referee.records.transcript import read_json, transcript_of
from referee.records.verify import Outcome, verify_file
from tests.support.boards import state_after
from tests.support.matches import TIMED_OUT_PLAY_MS
from tests.support.replays import ggp_exported, ggp_imported
from tests.support.replays import write_data as _write

HERE = Path(__file__).resolve().parent
RANDOM = PROGRAMS / "random_player.py"
MISBEHAVING = HERE / "players" / "misbehaving.py"
QUICK = Clocks(start_ms=2_000, play_ms=300)
runner = CliRunner()


def _program(name: str, script: Path, *args: str) -> PlayerSpec:
    return player_spec([sys.executable, str(script), *args], name)


def _random(name: str) -> PlayerSpec:
    return _program(name, RANDOM, "--seed", "11")


def _play(
    out: Path, game_id: str, specs: list[PlayerSpec | Player], policy: Policy
) -> dict[str, Any]:
    players = [
        ProgramPlayer(spec, out.with_suffix(f".{spec.name}.log"))
        if isinstance(spec, PlayerSpec)
        else spec
        for spec in specs
    ]
    setup = MatchSetup(out.stem, get_game(game_id), players, QUICK, policy, seed=5)
    asyncio.run(play_fresh(setup, out, results_key(out.parent, None)[0]))
    return json.loads(out.read_text())


def _resigning() -> HumanPlayer:
    """A person who plays their first legal move, then types quit."""
    typed = iter(["1", "quit"])

    async def read(prompt: str) -> str:
        return next(typed)

    return HumanPlayer(read, lambda text: None)


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Real transcripts: a clean match, faults replaced at random, a crash, a forfeit, and a
    person who resigned (under the random policy, where a resignation still forfeits)."""
    directory = tmp_path_factory.mktemp("played")
    return {
        "clean": _play(
            directory / "clean.json", "ticblock", [_random("a"), _random("b")], Policy.FORFEIT
        ),
        "replaced": _play(
            directory / "replaced.json",
            "ticblock",
            [_program("bad", MISBEHAVING, "illegal", "--at", "2"), _random("b")],
            Policy.RANDOM,
        ),
        "crashed": _play(
            directory / "crashed.json",
            "hex-pie",
            [_program("bad", MISBEHAVING, "exit", "--at", "2"), _random("b")],
            Policy.RANDOM,
        ),
        "forfeit": _play(
            directory / "forfeit.json",
            "ticblock",
            [_random("a"), _program("bad", MISBEHAVING, "illegal")],
            Policy.FORFEIT,
        ),
        "resigned": _play(
            directory / "resigned.json", "ticblock", [_resigning(), _random("b")], Policy.RANDOM
        ),
    }


@pytest.fixture(scope="module")
def timed_out(timed_out_results: Path) -> dict[str, Any]:
    """The match forfeited on time, as its JSON: obplayer slept past the play clock."""
    data: dict[str, Any] = json.loads((timed_out_results / "timed-out.json").read_text())
    assert data["end_reason"] == "forfeit"
    assert [(f["role"], f["kind"]) for f in data["faults"]] == [("obplayer", "timeout")]
    return data


def _verdict_of(tmp_path: Path, data: dict[str, Any]):
    verdict = verify_file(_write(tmp_path, data))
    assert verdict.outcome is Outcome.FAILED, verdict
    assert verdict.replayed is not None and verdict.replayed.problem is not None
    return verdict.replayed.problem


@pytest.mark.parametrize("name", ["clean", "replaced", "crashed", "forfeit", "resigned"])
def test_real_transcripts_verify(tmp_path: Path, played, name: str) -> None:
    data = played[name]
    verdict = verify_file(_write(tmp_path, data))
    assert verdict.outcome is Outcome.VERIFIED, verdict.problem
    replayed = verdict.replayed
    assert replayed is not None
    played = list(range(len(data["steps"]) + 1))
    # A forfeit's step, which completed no joint move, is shown too, on the board before it.
    forfeited = [len(data["steps"]) + 1] if data["end_reason"] == "forfeit" else []
    assert [frame.step for frame in replayed.frames] == played + forfeited
    assert replayed.frames[-1].state == state_after(data, len(data["steps"]))


def test_the_played_transcripts_have_what_the_tampering_tests_need(played) -> None:
    assert played["clean"]["end_reason"] == "terminal"
    assert [(f["kind"], f["replacement"] is not None) for f in played["replaced"]["faults"]] == [
        ("illegal", True)
    ]
    assert [f["kind"] for f in played["crashed"]["faults"]] == ["crash"]
    assert played["forfeit"]["end_reason"] == "forfeit"
    resigned = played["resigned"]
    assert (resigned["policy"], resigned["end_reason"]) == ("random", "forfeit")
    assert [(f["role"], f["kind"]) for f in resigned["faults"]] == [("xcplayer", "resigned")]
    assert resigned["goals"] == {"xcplayer": 0, "obplayer": 100}


def test_a_move_changed_to_another_legal_move_is_caught_where_it_breaks_the_game(
    tmp_path: Path, played
) -> None:
    data = copy.deepcopy(played["clean"])
    # xcplayer marks a cell at step 1 and another at step 3: marking the second cell at step 1
    # is legal there, and makes the step-3 move illegal (the cell is taken).
    later = data["steps"][2]["moves"]["xcplayer"]
    data["steps"][0]["moves"]["xcplayer"] = later
    problem = _verdict_of(tmp_path, data)
    assert (problem.step, problem.role) == (3, "xcplayer")
    assert str(problem).startswith(f"step 3: xcplayer: played {later}, which is not legal here")


def _other_legal_moves(data: dict[str, Any], step: int, role: str) -> list[str]:
    """A role's legal moves at a recorded step, but for the one recorded."""
    game = get_game(data["game"])
    legal = game.legal_moves(state_after(data, step - 1), game.role_index(role))
    return [move for move in legal if move != data["steps"][step - 1]["moves"][role]]


def _change_move(data: dict[str, Any], step: int, role: str) -> tuple[str, str]:
    """Change a role's move at a step to another legal one; the recorded move and the new one."""
    moves = data["steps"][step - 1]["moves"]
    recorded, moves[role] = moves[role], _other_legal_moves(data, step, role)[0]
    return recorded, moves[role]


def test_a_replacement_move_changed_to_another_legal_move_is_caught_by_the_seed(
    tmp_path: Path, played
) -> None:
    data = copy.deepcopy(played["replaced"])
    fault = data["faults"][0]
    _, other = _change_move(data, fault["step"], fault["role"])
    problem = _verdict_of(tmp_path, data)
    assert str(problem) == (
        f"step {fault['step']}: {fault['role']}: played {other},"
        f" but its fault records the replacement {fault['replacement']}"
    )


def test_a_move_drawn_for_a_crashed_player_must_be_the_seeds(tmp_path: Path, played) -> None:
    data = copy.deepcopy(played["crashed"])
    crash = data["faults"][0]
    # The first step after the crash where the crashed role had a choice.
    number = next(
        step
        for step in range(crash["step"] + 1, len(data["steps"]) + 1)
        if _other_legal_moves(data, step, crash["role"])
    )
    drawn, other = _change_move(data, number, crash["role"])
    problem = _verdict_of(tmp_path, data)
    assert str(problem) == (
        f"step {number}: {crash['role']}: out of the match, so its move is drawn with the match"
        f" seed: {drawn}, but the transcript has {other}"
    )


def test_an_illegal_move_is_named_with_its_step_and_role(tmp_path: Path, played) -> None:
    data = copy.deepcopy(played["clean"])
    taken = data["steps"][0]["moves"]["xcplayer"]
    data["steps"][1]["moves"]["obplayer"] = taken
    problem = _verdict_of(tmp_path, data)
    assert (problem.step, problem.role) == (2, "obplayer")
    assert str(problem).startswith(f"step 2: obplayer: played {taken}, which is not legal here")


def test_text_that_is_no_move_is_named(tmp_path: Path, played) -> None:
    data = copy.deepcopy(played["clean"])
    data["steps"][0]["moves"]["xcplayer"] = "(fly away)"
    assert str(_verdict_of(tmp_path, data)) == (
        "step 1: xcplayer: '(fly away)' is not a move of ticblock"
    )


def test_a_changed_goal_is_caught(tmp_path: Path, played) -> None:
    data = copy.deepcopy(played["clean"])
    winner = max(data["goals"], key=data["goals"].get)
    real = data["goals"][winner]
    data["goals"][winner] = real - 1
    assert str(_verdict_of(tmp_path, data)) == (
        f"goals: {winner}: {real - 1} is recorded, the rules give {real}"
    )


def test_a_changed_forfeit_goal_is_caught(tmp_path: Path, played) -> None:
    data = copy.deepcopy(played["forfeit"])
    data["goals"] = {"xcplayer": 0, "obplayer": 100}
    assert str(_verdict_of(tmp_path, data)) == (
        "goals: xcplayer: 0 is recorded, the forfeit gives 100"
    )


def test_a_removed_step_is_caught(tmp_path: Path, played) -> None:
    data = copy.deepcopy(played["clean"])
    del data["steps"][3]
    problem = _verdict_of(tmp_path, data)
    assert str(problem) == "step 4: missing: the next step recorded is step 5"


def test_a_removed_last_step_leaves_a_game_that_is_not_over(tmp_path: Path, played) -> None:
    data = copy.deepcopy(played["clean"])
    data["steps"].pop()
    last = len(data["steps"])
    assert str(_verdict_of(tmp_path, data)) == (
        f"end: recorded as ended by the rules, but the game is not over after step {last}"
    )


def test_a_forfeit_under_the_random_policy_is_caught(tmp_path: Path, played) -> None:
    data = copy.deepcopy(played["forfeit"])
    data["policy"] = "random"
    assert str(_verdict_of(tmp_path, data)) == "end: a forfeit, but the policy is random"


def test_a_fault_at_a_step_never_played_is_caught(tmp_path: Path, played) -> None:
    data = copy.deepcopy(played["forfeit"])
    never = len(data["steps"]) + 3
    data["faults"][0]["step"] = never
    assert str(_verdict_of(tmp_path, data)) == (
        f"step {never}: obplayer: a fault at a step that was never played"
    )


def test_a_truncated_file_is_unreadable_and_says_so(tmp_path: Path, played) -> None:
    text = json.dumps(played["clean"], indent=2)
    path = tmp_path / "t.json"
    path.write_text(text[: len(text) // 2])
    verdict = verify_file(path)
    assert verdict.outcome is Outcome.UNREADABLE
    assert verdict.problem is not None
    assert verdict.problem.startswith(f"{path}: line ")
    assert verdict.problem.endswith("the file ends early (truncated?)")


def test_a_file_cut_anywhere_says_it_ends_early(tmp_path: Path, played) -> None:
    # In a string, between values, or in a literal or number: `nul`, `tr`, `12.`.
    text = json.dumps(played["clean"], indent=2)
    path = tmp_path / "t.json"
    for cut in range(1, len(text) - 1):
        path.write_text(text[:cut])
        with pytest.raises(TranscriptError, match=r"the file ends early \(truncated\?\)$"):
            read_json(path)


def test_another_schema_version_is_told_apart_from_damage(tmp_path: Path, played) -> None:
    data = dict(played["clean"], schema_version=1)
    verdict = verify_file(_write(tmp_path, data))
    assert verdict.outcome is Outcome.OTHER_VERSION
    assert (
        verdict.problem == f"{tmp_path / 't.json'}: schema version 1; this referee reads version 2"
    )


def test_an_unknown_game_is_named(tmp_path: Path, played) -> None:
    data = dict(played["clean"], game="chess")
    assert str(_verdict_of(tmp_path, data)).startswith("game: unknown game 'chess'")


def _results(tmp_path: Path, played, tampered: bool) -> Path:
    """A results directory with the played transcripts, one of them tampered with if asked."""
    directory = tmp_path / "results"
    directory.mkdir()
    for name, data in played.items():
        _write(directory, data, f"{name}.json")
    if tampered:
        data = copy.deepcopy(played["clean"])
        data["goals"] = {role: 50 for role in data["goals"]}
        _write(directory, data, "edited.json")
    return directory


def test_cli_verify_a_good_transcript(tmp_path: Path, played) -> None:
    path = _write(tmp_path, played["clean"], signed=True)
    result = runner.invoke(app, ["replay", "--verify", str(path)])
    assert result.exit_code == 0, result.output
    goals = ", ".join(f"{role} {goal}" for role, goal in played["clean"]["goals"].items())
    key = played["clean"]["signature"]["public_key"]
    assert key.startswith("ed25519:")
    assert result.stdout == (
        f"signature: valid (key {key})\n{path}: verified; ticblock, result: {goals}"
        f" (terminal after {len(played['clean']['steps'])} steps)\n"
    )


def test_cli_verify_a_tampered_transcript_names_file_step_and_role(tmp_path: Path, played) -> None:
    data = copy.deepcopy(played["clean"])
    data["steps"][1]["moves"]["obplayer"] = "(fly away)"
    path = _write(tmp_path, data)
    result = runner.invoke(app, ["replay", "--verify", str(path)])
    assert result.exit_code == 1
    assert result.stdout == (
        "signature: unsigned\n"
        f"FAILED {path}: step 2: obplayer: '(fly away)' is not a move of ticblock\n"
    )


def test_cli_verify_json(tmp_path: Path, played) -> None:
    data = copy.deepcopy(played["clean"])
    del data["steps"][3]
    path = _write(tmp_path, data)
    result = runner.invoke(app, ["replay", "--verify", "--json", str(path)])
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["outcome"] == "failed"
    assert report["discrepancy"] == {
        "where": "step 4",
        "step": 4,
        "role": None,
        "what": "missing: the next step recorded is step 5",
    }


def test_cli_other_schema_version_is_reported_as_such(tmp_path: Path, played) -> None:
    path = _write(tmp_path, dict(played["clean"], schema_version=3))
    result = runner.invoke(app, ["replay", "--verify", str(path)])
    assert result.exit_code == 1
    assert result.stdout.startswith(f"OTHER SCHEMA VERSION {path}: schema version 3;")


def test_cli_a_directory_is_verified_with_a_summary_by_game(tmp_path: Path, played) -> None:
    directory = _results(tmp_path, played, tampered=False)
    result = runner.invoke(app, ["replay", str(directory)])
    assert result.exit_code == 0, result.output
    rows = [line.split() for line in result.stdout.splitlines()[2:5]]
    assert rows == [["hex-pie", "1", "0"], ["ticblock", "4", "0"], ["total", "5", "0"]]
    assert result.stdout.splitlines()[5] == "signatures: 5 unsigned"


def test_cli_a_directory_with_a_bad_transcript_fails(tmp_path: Path, played) -> None:
    directory = _results(tmp_path, played, tampered=True)
    (directory / "cut.json").write_text('{"schema": "referee-tra')
    result = runner.invoke(app, ["replay", str(directory), "--json"])
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert (report["verified"], report["failed"]) == (5, 2)
    assert {"game": "ticblock", "verified": 4, "failed": 1} in report["by_game"]
    assert {"game": "-", "verified": 0, "failed": 1} in report["by_game"]
    problems = {Path(f["file"]).name: f["problem"] for f in report["files"] if f["problem"]}
    real = played["clean"]["goals"]["xcplayer"]
    assert problems["edited.json"].endswith(
        f"goals: xcplayer: 50 is recorded, the rules give {real}"
    )
    assert problems["cut.json"].endswith("the file ends early (truncated?)")


def test_cli_show_one_step(tmp_path: Path, played) -> None:
    data = played["clean"]
    path = _write(tmp_path, data)
    game = get_game("ticblock")
    result = runner.invoke(app, ["replay", str(path), "--step", "3"])
    assert result.exit_code == 0, result.output
    board = game.render(state_after(data, 3))
    assert board in result.stdout
    assert "\nstep 3: xcplayer " in result.stdout
    assert "step 2:" not in result.stdout and "step 4:" not in result.stdout


def test_cli_show_every_step_with_times_and_faults(tmp_path: Path, played) -> None:
    data = played["replaced"]
    path = _write(tmp_path, data)
    result = runner.invoke(app, ["replay", str(path), "--watch", "--delay", "0"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[1] == "start"
    shown = [line for line in lines if line.startswith("step ")]
    assert len(shown) == len(data["steps"])
    first = data["steps"][0]
    mover = next(iter(first["times_ms"]))
    assert f"{mover} {first['moves'][mover]} {first['times_ms'][mover]:.1f} ms" in shown[0]
    fault = data["faults"][0]
    assert (
        f"fault: {fault['role']}: illegal at step {fault['step']}, {fault['detail']};"
        f" played {fault['replacement']} instead"
    ) in lines
    assert lines[-1].startswith("result: ")


def test_cli_show_stops_at_the_first_discrepancy(tmp_path: Path, played) -> None:
    data = copy.deepcopy(played["clean"])
    data["steps"][1]["moves"]["obplayer"] = data["steps"][0]["moves"]["xcplayer"]
    path = _write(tmp_path, data)
    result = runner.invoke(app, ["replay", str(path)])
    assert result.exit_code == 1
    assert [
        line.split(":")[0] for line in result.stdout.splitlines() if line.startswith("step")
    ] == ["step 1"]
    assert result.stdout.splitlines()[-1].startswith(f"FAILED {path}: step 2: obplayer: played")


def test_cli_show_json_has_a_board_per_step(tmp_path: Path, played) -> None:
    data = played["crashed"]
    result = runner.invoke(app, ["replay", str(_write(tmp_path, data)), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["outcome"] == "verified"
    assert [f["step"] for f in report["frames"]] == list(range(len(data["steps"]) + 1))
    assert report["frames"][-1]["terminal"] is True
    assert [f["kind"] for frame in report["frames"] for f in frame["faults"]] == ["crash"]


def test_cli_show_json_of_one_step_has_its_board_only(tmp_path: Path, played) -> None:
    data = played["clean"]
    path = _write(tmp_path, data)
    result = runner.invoke(app, ["replay", str(path), "--step", "3", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["outcome"] == "verified"
    assert [frame["step"] for frame in report["frames"]] == [3]


def test_cli_a_step_past_the_end_is_told_before_the_match_is_replayed(
    tmp_path: Path, played, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(tmp_path, played["clean"])
    replays: list[tuple[object, ...]] = []
    monkeypatch.setattr("referee.records.verify.verify_file", lambda *args: replays.append(args))
    result = runner.invoke(app, ["replay", str(path), "--step", "99"])
    assert result.exit_code == 2
    steps = len(played["clean"]["steps"])
    assert result.stderr == f"referee: error: --step 99: the match ends at step {steps}\n"
    assert replays == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--step", "99"], "--step 99: the match ends at step"),
        (["--step", "99", "--json"], "--step 99: the match ends at step"),
        (["--step", "2", "--verify"], "--step shows one board; --verify checks the whole match"),
        (["--watch"], "--step, --watch and --seat show one transcript, not a directory"),
        (["--seat", "xcplayer", "--dir"], "--step, --watch and --seat show one transcript"),
        (
            ["--seat", "nobody"],
            "--seat nobody: ticblock has no role 'nobody'; its seats are xcplayer, obplayer",
        ),
        (["--seat", "xcplayer", "--verify"], "--seat prints what a seat was told; --verify"),
        (["--seat", "xcplayer", "--watch"], "--seat prints what a seat was told; --verify"),
        ([], "no such transcript or directory"),
    ],
)
def test_cli_bad_requests_are_one_line_errors(tmp_path: Path, played, args, message) -> None:
    path = _write(tmp_path, played["clean"])
    if "--dir" in args:
        args, path = [arg for arg in args if arg != "--dir"], tmp_path
    target = {"--step": path, "--seat": path, "--watch": tmp_path}.get(
        args[0] if args else "", tmp_path / "nope"
    )
    result = runner.invoke(app, ["replay", str(target), *args])
    assert result.exit_code == 2
    assert message in result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_cli_an_empty_directory_is_a_bad_request(tmp_path: Path) -> None:
    result = runner.invoke(app, ["replay", str(tmp_path)])
    assert result.exit_code == 2
    assert (
        result.stderr == f"referee: error: {tmp_path}: no transcripts (*.json) in this directory\n"
    )


def test_export_ggp(tmp_path: Path, played) -> None:
    data = played["forfeit"]
    out = tmp_path / "ggp.json"
    result = runner.invoke(
        app, ["export", str(_write(tmp_path, data)), "--format", "ggp", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    match = json.loads(out.read_text())
    roles = ["xcplayer", "obplayer"]
    assert match["matchId"] == data["match_id"]
    assert match["gameName"] == "ticblock"
    assert match["gameRoleNames"] == roles
    assert match["playerNamesFromHost"] == ["a", "bad"]
    assert match["isPlayerHuman"] == [False, False]
    assert (match["startClock"], match["playClock"]) == (2, 0.3)
    assert match["moves"] == [[step["moves"][role] for role in roles] for step in data["steps"]]
    # Forfeited before the game's end: no goals a reader could take for the game's result,
    # and the fault is in the errors, as ggp-base records a player's.
    assert "goalValues" not in match
    assert (match["isCompleted"], match["isAborted"]) == (False, True)
    fault = data["faults"][0]
    assert fault["step"] == len(data["steps"]) + 1
    assert len(match["errors"]) == fault["step"] + 1
    played_move = fault["detail"].removeprefix("played ").split(", which")[0]
    assert match["errors"][fault["step"]] == ["", f"IL {played_move}"]
    assert all(row == ["", ""] for row in match["errors"][:-1])
    assert len(match["states"]) == len(match["moves"]) + 1 == len(match["stateTimes"])
    assert "(control xcplayer)" in match["states"][0]
    assert match["stateTimes"] == sorted(match["stateTimes"])
    assert match["gameRulesheet"].startswith(";")


def test_a_resignation_exports_as_ggp_base_s_nearest_code_ce(tmp_path: Path, played) -> None:
    data = played["resigned"]
    match = ggp_exported(tmp_path, data, "resigned")
    assert match["isPlayerHuman"] == [True, False]
    assert (match["isCompleted"], match["isAborted"]) == (False, True)
    assert match["errors"][data["faults"][0]["step"]] == ["CE", ""]


@pytest.mark.parametrize("name", ["clean", "replaced", "crashed", "forfeit", "resigned"])
def test_an_export_imports_as_the_very_transcript_it_came_from(
    tmp_path: Path, played, name: str
) -> None:
    data = played[name]
    result, out = ggp_imported(tmp_path, ggp_exported(tmp_path, data, name), name)
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text()) == data
    assert verify_file(out).outcome is Outcome.VERIFIED


@pytest.mark.parametrize("name", ["clean", "replaced", "crashed"])
def test_a_match_another_manager_played_imports_and_verifies(
    tmp_path: Path, played, name: str
) -> None:
    data = played[name]
    match = ggp_exported(tmp_path, data, name)
    del match["x-referee-transcript"]
    result, out = ggp_imported(tmp_path, match, name)
    assert result.exit_code == 0, result.output
    imported = json.loads(out.read_text())
    verdict = verify_file(out)
    assert verdict.outcome is Outcome.VERIFIED, verdict.problem
    assert imported["origin"] == "ggp"
    assert [step["moves"] for step in imported["steps"]] == [s["moves"] for s in data["steps"]]
    assert imported["goals"] == data["goals"]
    faults = [(f["step"], f["role"], f["kind"], f["replacement"]) for f in imported["faults"]]
    assert faults == [(f["step"], f["role"], f["kind"], f["replacement"]) for f in data["faults"]]


def test_an_imported_match_with_an_illegal_move_fails_verification(tmp_path: Path, played) -> None:
    match = ggp_exported(tmp_path, played["clean"], "clean")
    del match["x-referee-transcript"]
    match["moves"][0] = ["noop", "noop"]
    result, out = ggp_imported(tmp_path, match, "clean")
    assert result.exit_code == 0, result.output
    verdict = verify_file(out)
    assert verdict.outcome is Outcome.FAILED
    assert "step 1: xcplayer: played noop, which is not legal here" in str(verdict.problem)


def test_an_export_whose_moves_were_edited_is_not_imported(tmp_path: Path, played) -> None:
    match = ggp_exported(tmp_path, played["clean"], "clean")
    match["moves"][2] = list(reversed(match["moves"][2]))
    result, out = ggp_imported(tmp_path, match, "clean")
    assert result.exit_code == 2
    assert "moves disagrees with the referee's record in x-referee-transcript" in result.stderr
    assert not out.exists()


def test_a_match_that_names_its_game_by_url_is_imported_with_its_rules(
    tmp_path: Path, played
) -> None:
    match = ggp_exported(tmp_path, played["clean"], "clean")
    del match["x-referee-transcript"]
    rules = tmp_path / "ticblock.kif"
    rules.write_text(match.pop("gameRulesheet"))
    match["gameMetaURL"] = "http://games.ggp.org/base/games/ticblock/v0/"
    result, _ = ggp_imported(tmp_path, match, "clean")
    assert result.exit_code == 2
    assert "no rules in the match (its game is http://games.ggp.org" in result.stderr
    result, out = ggp_imported(tmp_path, match, "clean", "--rules", str(rules))
    assert result.exit_code == 0, result.output
    assert verify_file(out).outcome is Outcome.VERIFIED


def test_export_refuses_a_transcript_that_does_not_verify(tmp_path: Path, played) -> None:
    data = copy.deepcopy(played["clean"])
    del data["steps"][3]
    path = _write(tmp_path, data)
    result = runner.invoke(app, ["export", str(path), "--format", "ggp"])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == f"FAILED {path}: step 4: missing: the next step recorded is step 5\n"


def test_an_aborted_match_verifies_as_far_as_it_went(tmp_path: Path, played) -> None:
    data = copy.deepcopy(played["clean"])
    data["steps"] = data["steps"][:4]
    data.update(end_reason="aborted", goals=None)
    path = _write(tmp_path, data)
    result = runner.invoke(app, ["replay", str(path)])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == "result: none (aborted after 4 steps)"
    data["goals"] = {"xcplayer": 0, "obplayer": 0}
    assert str(_verdict_of(tmp_path, data)) == ("goals: recorded, but an aborted match has none")


def test_a_match_stopped_as_it_started_verifies_with_the_starts_it_waited_for(
    tmp_path: Path, played
) -> None:
    """A stop (SIGTERM) while the players start: aborted before its first step, a role's
    `ready` still awaited has neither a start time nor a fault, and nothing was decided."""
    data = copy.deepcopy(played["clean"])
    data["steps"] = []
    data.update(end_reason="aborted", goals=None)
    del data["start_times_ms"]["obplayer"]
    path = _write(tmp_path, data)
    result = runner.invoke(app, ["replay", str(path)])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == "result: none (aborted after 0 steps)"
    # A match that went on past its start had every role's start decided.
    data = copy.deepcopy(played["clean"])
    data["steps"] = data["steps"][:1]
    data.update(end_reason="aborted", goals=None)
    del data["start_times_ms"]["obplayer"]
    assert str(_verdict_of(tmp_path, data)) == (
        "step 0: obplayer: neither a start time nor a start fault is recorded"
    )


def _first_time(data: dict[str, Any]) -> dict[str, float]:
    return next(step["times_ms"] for step in data["steps"] if step["times_ms"])


def _set_first(times: dict[str, float], value: float) -> None:
    times[next(iter(times))] = value


def _resigned_at_first_step(data: dict[str, Any]) -> None:
    """The resignation moved to step 1, where the person played a move: the match went on."""
    data["faults"][0]["step"] = 1
    del data["steps"][0]["times_ms"]["xcplayer"]


# (transcript, what is changed, what the discrepancy says)
CONSISTENCY = {
    "terminal to aborted": (
        "clean",
        lambda d: d.update(end_reason="aborted", goals=None),
        "end: recorded as aborted, but the game is over after step",
    ),
    "illegal to timeout, with its answer time": (
        "replaced",
        lambda d: d["faults"][0].update(kind="timeout"),
        "a timeout, but its answer came after",
    ),
    "a fault deleted": (
        "replaced",
        lambda d: d["faults"].clear(),
        "asked for a move, but no answer time or fault",
    ),
    "a crash with an answer time": (
        "crashed",
        lambda d: d["faults"][0].update(time_ms=5.0),
        "a crash fault, yet an answer time is recorded",
    ),
    "a negative answer time": (
        "clean",
        lambda d: _set_first(_first_time(d), -1.0),
        "an answer time of -1.0 ms",
    ),
    "an answer over the clock, not a timeout": (
        "clean",
        lambda d: _set_first(_first_time(d), 600.0),
        "answered after 600.0 ms, over the 300 ms it had, yet no timeout is recorded",
    ),
    "ended before it started": (
        "clean",
        lambda d: d.update(ended_at="2001-01-01T00:00:00.000Z"),
        "ended_at: 2001-01-01T00:00:00.000Z is before started_at",
    ),
    "a clock of 0": (
        "clean",
        lambda d: d["clocks"].update(play_ms=0),
        "clocks: play clock must be a positive number of ms",
    ),
    "a seed out of range": ("clean", lambda d: d.update(seed=-1), "seed: -1 is not a seed"),
    "a negative count of lost attempts": (
        "clean",
        lambda d: d.update(lost_attempts=-1),
        "lost_attempts: -1: a count cannot be negative",
    ),
    "a forfeit with a replacement": (
        "forfeit",
        lambda d: d["faults"][0].update(replacement="(fly away)"),
        "a fault under the forfeit policy has no replacement",
    ),
    "a resignation on a program's seat": (
        "crashed",
        lambda d: d["faults"][0].update(kind="resigned"),
        "player1: resigned, but only a person can, and a program played it",
    ),
    "a resignation recorded as a crash, which does not forfeit under random": (
        "resigned",
        lambda d: d["faults"][0].update(kind="crash"),
        "end: a forfeit, but the policy is random",
    ),
    "a resignation with a replacement": (
        "resigned",
        lambda d: d["faults"][0].update(replacement="(mark 1 1)"),
        "xcplayer: resigned, which forfeits, yet has a replacement",
    ),
    "a resignation with an answer time": (
        "resigned",
        lambda d: d["faults"][0].update(time_ms=5.0),
        "a resigned fault, yet an answer time is recorded",
    ),
    "a match played on after a resignation": (
        "resigned",
        _resigned_at_first_step,
        "step 1: xcplayer: a resigned fault under the random policy, yet the match went on",
    ),
    "a start time missing": (
        "clean",
        lambda d: d["start_times_ms"].pop("obplayer"),
        "step 0: obplayer: neither a start time nor a start fault is recorded",
    ),
    "seats swapped in a tournament match": (
        "clean",
        lambda d: d.update(match_id="ticblock-r1-b-vs-a"),
        "seats: a vs b, in this order, is not the seating of ticblock-r1-b-vs-a",
    ),
}


@pytest.mark.parametrize("case", list(CONSISTENCY))
def test_consistency_checks_need_no_key(tmp_path: Path, played, case: str) -> None:
    name, change, said = CONSISTENCY[case]
    data = copy.deepcopy(played[name])
    change(data)
    assert said in str(_verdict_of(tmp_path, data))


def test_a_tournament_match_id_that_names_its_seats_verifies(tmp_path: Path, played) -> None:
    data = dict(played["clean"], match_id="ticblock-r1-a-vs-b")
    assert verify_file(_write(tmp_path, data)).outcome is Outcome.VERIFIED


def test_times_of_faulty_answers_go_with_their_faults(played) -> None:
    fault = played["replaced"]["faults"][0]
    assert fault["kind"] == "illegal" and fault["time_ms"] > 0
    step = played["replaced"]["steps"][fault["step"] - 1]
    assert fault["role"] not in step["times_ms"]
    assert played["crashed"]["faults"][0]["time_ms"] is None


def test_an_imported_match_id_names_a_file_in_the_results_only(
    tmp_path: Path, played, monkeypatch: pytest.MonkeyPatch
) -> None:
    match = ggp_exported(tmp_path, played["clean"], "clean")
    del match["x-referee-transcript"]
    match["matchId"] = "../../escape"
    path = tmp_path / "in.json"
    path.write_text(json.dumps(match))
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    result = runner.invoke(app, ["import", str(path), "--format", "ggp"])
    assert result.exit_code == 0, result.output
    written = work / "matches" / "results" / ".._.._escape.json"
    assert result.stdout == f"transcript: {written.relative_to(work)}\n"
    assert json.loads(written.read_text())["match_id"] == "../../escape"
    assert not (tmp_path / "escape.json").exists()


def _forfeited_on_time(data: dict[str, Any]) -> tuple[int, str]:
    """The step the timeout ended the match at (after the last played), and how a person
    reads it: the seat, the fault, its step, and the play clock it did not answer within."""
    step = len(data["steps"]) + 1
    return step, f"obplayer: timeout at step {step}, no answer within {TIMED_OUT_PLAY_MS} ms"


def test_cli_replay_says_who_forfeited_on_time_where_and_why(tmp_path: Path, timed_out) -> None:
    step, why = _forfeited_on_time(timed_out)
    result = runner.invoke(app, ["replay", str(_write(tmp_path, timed_out))])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    shown = lines.index(f"step {step}: no joint move, the match ended while it was asked")
    assert lines[shown + 1] == f"fault: {why}"
    board = get_game("ticblock").render(state_after(timed_out, step - 1))
    assert "\n".join(lines[shown + 2 :]).startswith(board)
    assert lines[-1] == f"result: xcplayer 100, obplayer 0 (forfeit after {step - 1} steps; {why})"


def test_cli_replay_json_has_the_forfeit_and_its_step(tmp_path: Path, timed_out) -> None:
    step, why = _forfeited_on_time(timed_out)
    result = runner.invoke(app, ["replay", str(_write(tmp_path, timed_out)), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    fault = {
        "step": step,
        "role": "obplayer",
        "kind": "timeout",
        "detail": f"no answer within {TIMED_OUT_PLAY_MS} ms",
        "replacement": None,
        "time_ms": None,
    }
    # The forfeiting seat loses, the other wins: who won, for a script as for a person.
    goals = {"xcplayer": 100, "obplayer": 0}
    assert report["end"] == {
        "reason": "forfeit",
        "step": step,
        "goals": goals,
        "faults": [fault],
        "why": why,
    }
    last = report["frames"][-1]
    assert (last["step"], last["played"], last["moves"], last["faults"]) == (
        step,
        False,
        {},
        [fault],
    )
    assert last["board"] == get_game("ticblock").render(state_after(timed_out, step - 1))
    assert all(frame["played"] for frame in report["frames"][:-1])


def test_cli_replay_reaches_the_step_the_match_was_forfeited_at(tmp_path: Path, timed_out) -> None:
    step, why = _forfeited_on_time(timed_out)
    path = _write(tmp_path, timed_out)
    result = runner.invoke(app, ["replay", str(path), "--step", str(step)])
    assert result.exit_code == 0, result.output
    board = get_game("ticblock").render(state_after(timed_out, step - 1))
    assert f"\nfault: {why}\n{board}\n" in result.stdout
    assert f"step {step - 1}:" not in result.stdout
    as_json = runner.invoke(app, ["replay", str(path), "--step", str(step), "--json"])
    assert [f["step"] for f in json.loads(as_json.stdout)["frames"]] == [step]
    past = runner.invoke(app, ["replay", str(path), "--step", str(step + 1)])
    assert past.exit_code == 2
    assert past.stderr == f"referee: error: --step {step + 1}: the match ends at step {step}\n"


def test_the_result_of_a_match_the_rules_aborted_says_where_they_failed(played) -> None:
    data = copy.deepcopy(played["clean"])
    data["steps"] = data["steps"][:4]
    limit = {"step": 4, "detail": "needs more than 1 GiB to ground", "limit": "memory"}
    data.update(end_reason="aborted", goals=None, rules_fault=limit)
    assert result_line(transcript_of(data, "t.json")) == (
        "result: none (aborted after 4 steps; the rules fail at state 4 (after step 4):"
        " needs more than 1 GiB to ground)"
    )


# Time odds and a margin: xcplayer answers each `go` after 500 ms on the match's clock of
# 200 ms, in time by a margin of 3 s (late on any machine without it, in time with it on
# any machine that runs the tests); obplayer has clocks of its own.
ODDS = Clocks(start_ms=2_000, play_ms=200, margin_ms=3_000)
OWN = Clocks(start_ms=3_000, play_ms=1_000, time_bank_ms=500, margin_ms=3_000)


@pytest.fixture(scope="module")
def odds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A real transcript, signed, of a match with a margin and a seat's own clocks."""
    out = tmp_path_factory.mktemp("odds") / "odds.json"
    specs = [_program("slow", MISBEHAVING, "late", "--at", "0", "--delay-ms", "500"), _random("b")]
    players = [ProgramPlayer(spec, out.with_suffix(f".{spec.name}.log")) for spec in specs]
    setup = MatchSetup(
        out.stem,
        get_game("ticblock"),
        players,
        ODDS,
        Policy.FORFEIT,
        seed=5,
        seat_clocks=[ODDS, OWN],
    )
    asyncio.run(play_fresh(setup, out, results_key(out.parent, None)[0]))
    data: dict[str, Any] = json.loads(out.read_text())
    assert data["end_reason"] == "terminal" and not data["faults"], data["faults"]
    return data


def test_a_margin_and_a_seats_own_clocks_are_recorded_and_verify(tmp_path: Path, odds) -> None:
    assert odds["clocks"] == {"start_ms": 2_000, "play_ms": 200, "time_bank_ms": 0}
    assert odds["time_margin_ms"] == 3_000
    assert [seat["clocks"] for seat in odds["seats"]] == [None, OWN.recorded()]
    assert all(step["times_ms"].get("xcplayer", 500) >= 500 for step in odds["steps"])
    path = _write(tmp_path, odds, signed=True)
    result = runner.invoke(app, ["replay", "--verify", str(path)])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("signature: valid")


def test_a_forged_margin_that_forgives_a_late_answer_fails_naming_step_and_role(
    tmp_path: Path, odds
) -> None:
    data = copy.deepcopy(odds)
    data["time_margin_ms"] = 100
    path = _write(tmp_path, data)
    result = runner.invoke(app, ["replay", "--verify", str(path)])
    assert result.exit_code == 1
    late = odds["steps"][0]["times_ms"]["xcplayer"]
    assert result.stdout == (
        "signature: unsigned\n"
        f"FAILED {path}: step 1: xcplayer: answered after {late} ms, over the 200 ms + 100 ms"
        " margin it had, yet no timeout is recorded\n"
    )
    # Signed, the change is the signature's to catch first.
    data["signature"] = odds["signature"]
    signed = runner.invoke(
        app, ["replay", "--verify", str(_write(tmp_path, data, "signed.json", signed=True))]
    )
    assert signed.exit_code == 1 and "signature: invalid" in signed.stdout


def test_a_record_of_the_same_match_without_its_margin_fails_at_the_first_late_answer(
    tmp_path: Path, odds
) -> None:
    data = copy.deepcopy(odds)
    del data["time_margin_ms"]
    assert "step 1: xcplayer: answered after" in str(_verdict_of(tmp_path, data))


def test_each_seat_is_judged_by_its_own_clocks(tmp_path: Path, odds) -> None:
    # The match's clock would let xcplayer's 500 ms answers in time; its own does not.
    data = copy.deepcopy(odds)
    data["time_margin_ms"] = 0
    data["clocks"]["play_ms"] = 1_000
    data["seats"][0]["clocks"] = {"start_ms": 2_000, "play_ms": 200, "time_bank_ms": 0}
    late = odds["steps"][0]["times_ms"]["xcplayer"]
    assert str(_verdict_of(tmp_path, data)) == (
        f"step 1: xcplayer: answered after {late} ms, over the 200 ms it had, yet no timeout"
        " is recorded"
    )
    data["seats"][0]["clocks"] = None
    assert verify_file(_write(tmp_path, data)).outcome is Outcome.VERIFIED


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda d: d.update(time_margin_ms=-1), "time_margin_ms: time margin must be zero or"),
        (
            lambda d: d.update(time_margin_ms=86_400_001),
            "time_margin_ms: time margin must be at most 86400000 ms (a day)",
        ),
        (
            lambda d: d["seats"][1]["clocks"].update(play_ms=0),
            "seats[1].clocks: play clock must be a positive number of ms",
        ),
        (
            lambda d: d["seats"][1]["clocks"].pop("time_bank_ms"),
            "seats[1].clocks: fields ['play_ms', 'start_ms'], expected",
        ),
    ],
)
def test_a_margin_or_a_seats_clocks_out_of_bounds_is_named(
    tmp_path: Path, odds, change, said: str
) -> None:
    data = copy.deepcopy(odds)
    change(data)
    assert said in str(_verdict_of(tmp_path, data))


def test_a_record_from_before_margins_and_seats_clocks_reads_and_verifies_signed(
    tmp_path: Path, played
) -> None:
    # As version 2 was written before: no `time_margin_ms`, no seat `clocks`.
    data = {k: v for k, v in played["clean"].items() if k not in ("time_margin_ms", "signature")}
    data["seats"] = [{k: v for k, v in s.items() if k != "clocks"} for s in data["seats"]]
    key, _ = results_key(tmp_path / "old", None)
    data["signature"] = key.sign(data)
    verdict = verify_file(_write(tmp_path, data, signed=True), key.public)
    assert verdict.outcome is Outcome.VERIFIED, verdict.problem
    transcript = transcript_of(data, "old.json")
    assert transcript.time_margin_ms == 0 and all(s.clocks is None for s in transcript.seats)


def _seat_lines(tmp_path: Path, data: dict[str, Any], role: str, *options: str) -> list[str]:
    """What `replay --seat ROLE` prints, after its two lines of header."""
    result = runner.invoke(app, ["replay", str(_write(tmp_path, data)), "--seat", role, *options])
    assert result.exit_code == 0, result.output
    return result.output.splitlines()


def _told_by_the_rules(data: dict[str, Any], role: str, asked: bool = True) -> list[str]:
    """What the protocol tells `role` of a match of perfect information, worked out from the
    transcript's moves and the rules: its `go` at each step it answered or faulted at (the
    legal moves of the state before, with the play clock: these matches have no time bank),
    every joint move, the goals."""
    game = get_game(data["game"])
    play_ms = data["clocks"]["play_ms"]
    faulted = {fault["step"] for fault in data["faults"] if fault["role"] == role}
    lines = [f"> start {data['match_id']} {data['game']} {role} 2000 {play_ms}"]
    last = len(data["steps"]) + (data["end_reason"] == "forfeit")
    for number in range(1, last + 1):
        step = data["steps"][number - 1] if number <= len(data["steps"]) else None
        if asked and ((step and role in step["times_ms"]) or number in faulted):
            legal = game.legal_moves(state_after(data, number - 1), game.roles.index(role))
            lines.append(f"> go {number} {play_ms} {' '.join(legal)}")
        if step is not None:
            lines.append(f"> moves {number} {' '.join(step['moves'][r] for r in game.roles)}")
    goals = " ".join(str(data["goals"][r]) for r in game.roles)
    return [*lines, f"> end {goals} {data['end_reason']}"]


def test_replay_seat_shows_a_seat_of_perfect_information_every_move_and_its_faults(
    tmp_path: Path, played
) -> None:
    data = played["replaced"]
    (fault,) = data["faults"]
    assert (fault["role"], fault["kind"]) == ("xcplayer", "illegal")
    lines = _seat_lines(tmp_path, data, "xcplayer")
    assert lines[1].startswith("what xcplayer (bad) was told (>) and answered (<)")
    assert "every role's move (moves): a game of perfect information" in lines[1]
    assert [line for line in lines if line.startswith(">")] == _told_by_the_rules(data, "xcplayer")
    # Its illegal answer is a fault, and the move drawn instead is the one it is told next.
    step = data["steps"][fault["step"] - 1]
    at = lines.index(f"! illegal: {fault['detail']}; {fault['replacement']} played instead")
    assert lines[at - 1].startswith(f"> go {fault['step']} 300 ")
    assert lines[at + 1] == f"> moves {fault['step']} {step['moves']['xcplayer']} noop"
    assert step["moves"]["xcplayer"] == fault["replacement"]
    # Every answer it gave in time follows its `go`, with its time.
    answers = [line for line in lines if line.startswith("<")]
    assert answers[0] == f"< ready  ({data['start_times_ms']['xcplayer']:.1f} ms)"
    timed = [s for s in data["steps"] if "xcplayer" in s["times_ms"]]
    assert answers[1:] == [
        f"< {s['moves']['xcplayer']}  ({s['times_ms']['xcplayer']:.1f} ms)" for s in timed
    ]


def test_replay_seat_of_a_forfeit_ends_with_the_go_it_failed_and_no_moves(
    tmp_path: Path, played
) -> None:
    data = played["forfeit"]
    (fault,) = data["faults"]
    lines = _seat_lines(tmp_path, data, "obplayer")
    assert [line for line in lines if line.startswith(">")] == _told_by_the_rules(data, "obplayer")
    assert lines[-3].startswith(f"> go {fault['step']} 300 ")
    assert lines[-2] == f"! illegal: {fault['detail']}"
    assert lines[-1] == "> end 100 0 forfeit"


def test_replay_seat_json_and_one_step(tmp_path: Path, played) -> None:
    data = played["clean"]
    path = _write(tmp_path, data)
    result = runner.invoke(app, ["replay", str(path), "--seat", "obplayer", "--json"])
    assert result.exit_code == 0, result.output
    shown = json.loads(result.output)
    assert shown["outcome"] == "verified" and "frames" not in shown
    seat = shown["seat"]
    assert (seat["role"], seat["imperfect"], seat["imported"]) == ("obplayer", False, False)
    assert seat["start"]["ready_ms"] == data["start_times_ms"]["obplayer"]
    assert seat["end"] == {
        "goals": [data["goals"]["xcplayer"], data["goals"]["obplayer"]],
        "reason": "terminal",
    }
    game = get_game("ticblock")
    for step, told in zip(data["steps"], seat["steps"], strict=True):
        assert told["moves"] == step["moves"] and told["percepts"] is None
        assert told["move"] == step["moves"]["obplayer"]
        if "obplayer" in step["times_ms"]:
            legal = game.legal_moves(state_after(data, step["step"] - 1), 1)
            assert told["asked"] == {"ms": 300, "legal": list(legal)}
            assert told["time_ms"] == step["times_ms"]["obplayer"]
        else:
            assert told["asked"] is None and told["time_ms"] is None
    # --step: that step's lines only.
    one = _seat_lines(tmp_path, data, "obplayer", "--step", "2")
    expected = [
        line
        for line in _told_by_the_rules(data, "obplayer")
        if line.split()[1] in ("go", "moves") and line.split()[2] == "2"
    ]
    assert len(expected) == 2
    assert [line for line in one[2:] if line.startswith(">")] == expected


def test_replay_seat_of_a_match_another_manager_played(tmp_path: Path, played) -> None:
    data = played["replaced"]
    match = ggp_exported(tmp_path, data, "replaced")
    del match["x-referee-transcript"]
    result, out = ggp_imported(tmp_path, match, "replaced")
    assert result.exit_code == 0, result.output
    imported = json.loads(out.read_text())
    shown = runner.invoke(app, ["replay", str(out), "--seat", "xcplayer"])
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    assert "another manager played this match" in lines[1]
    told = [line for line in lines if line.startswith(">")]
    # Its start is this referee's own line for the clocks the GGP match had.
    assert told[1:] == _told_by_the_rules(imported, "xcplayer", asked=False)[1:]
    (fault,) = imported["faults"]
    assert f"! illegal: {fault['detail']}; {fault['replacement']} played instead" in lines
