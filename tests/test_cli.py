"""The command line, through typer's test runner: output and exit codes."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from referee.cli import app
from referee.games import GAMES, get_game

runner = CliRunner()


def test_games_table_lists_every_game_with_its_roles() -> None:
    result = runner.invoke(app, ["games"])
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["game", "roles", "description"]
    for game in GAMES.values():
        (row,) = [line for line in lines if line.startswith(game.id + " ")]
        assert ", ".join(game.roles) in row


def test_games_json() -> None:
    result = runner.invoke(app, ["games", "--json"])
    assert result.exit_code == 0
    rows = json.loads(result.stdout)
    assert [row["id"] for row in rows] == list(GAMES)
    assert rows[2]["roles"] == ["player1", "player2"]
    assert all(row["description"] for row in rows)


@pytest.mark.parametrize("game_id", list(GAMES))
def test_rules_explain_moves_with_an_example(game_id: str) -> None:
    result = runner.invoke(app, ["rules", game_id])
    assert result.exit_code == 0
    game = get_game(game_id)
    assert f"Roles, in order: {', '.join(game.roles)}" in result.stdout
    assert f"Example move: {game.example_move}" in result.stdout
    assert "Move" in result.stdout


@pytest.mark.parametrize(
    "command", [["rules", "chess"], ["random", "chess"], ["random", "chess", "--show"]]
)
def test_unknown_game_is_one_line_and_exit_2(command: list[str]) -> None:
    result = runner.invoke(app, command)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == (
        "referee: error: unknown game 'chess' (known: blocker-parallel, ticblock, hex-pie, "
        "double-tictactoe, quad)\n"
    )


@pytest.mark.parametrize("game_id", list(GAMES))
def test_random_game_replays_to_the_printed_goals(game_id: str) -> None:
    result = runner.invoke(app, ["random", game_id, "--seed", "5"])
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0] == f"{game_id}, seed 5"
    game = get_game(game_id)
    state = game.initial_state()
    for number, line in enumerate(lines[1:-1], start=1):
        prefix, _, body = line.partition(": ")
        assert prefix == f"step {number}"
        moves = dict(re.findall(r"(\w+) (\([^()]*\)|\w+)", body))
        state = game.next_state(state, tuple(game.parse_move(moves[role]) for role in game.roles))
    assert game.is_terminal(state)
    goals = ", ".join(
        f"{role} {goal}" for role, goal in zip(game.roles, game.goals(state), strict=True)
    )
    assert lines[-1] == f"goals: {goals} (after {len(lines) - 2} steps)"


def test_random_game_is_the_same_for_the_same_seed_and_shows_boards() -> None:
    first = runner.invoke(app, ["random", "quad", "--seed", "11", "--show"])
    second = runner.invoke(app, ["random", "quad", "--seed", "11", "--show"])
    assert first.exit_code == 0
    assert first.stdout == second.stdout
    steps = sum(line.startswith("step ") for line in first.stdout.splitlines())
    # One board before the first step and one after each step.
    assert first.stdout.count("c1 c2 c3 c4 c5 c6 c7") == steps + 1


def test_random_game_without_a_seed_prints_the_seed_it_chose() -> None:
    result = runner.invoke(app, ["random", "ticblock"])
    assert result.exit_code == 0
    seed = int(result.stdout.splitlines()[0].removeprefix("ticblock, seed "))
    again = runner.invoke(app, ["random", "ticblock", "--seed", str(seed)])
    assert again.stdout == result.stdout


def test_no_arguments_shows_help() -> None:
    result = runner.invoke(app, [])
    assert "conformance" in result.output
    assert "random" in result.output
