"""Playing the games in tests: scripted moves applied by the rules, the states of a
transcript, two roles' moves in turn, and what a board picture shows."""

from __future__ import annotations

import json
from collections.abc import Hashable, Iterable
from pathlib import Path
from typing import Any

from referee.games import NOOP, Game, get_game, load_text
from referee.games.boards import crossing
from referee.games.boards.picture import Board


def play(game: Game, moves: Iterable[str | tuple[str, ...]], state: Hashable | None = None):
    """Apply moves from `state` (default: the start) and return the state after them.

    A tuple is a whole joint move in role order; a single string is the move of the one
    role in control, the others playing noop.
    """
    if state is None:
        state = game.initial_state()
    for move in moves:
        if isinstance(move, str):
            in_control = [
                role for role in range(len(game.roles)) if game.legal_moves(state, role) != (NOOP,)
            ]
            assert len(in_control) == 1, f"no single role in control for {move!r}"
            joint = [NOOP] * len(game.roles)
            joint[in_control[0]] = game.parse_move(move)
        else:
            joint = [game.parse_move(text) for text in move]
        state = game.next_state(state, tuple(joint))
    return state


def state_after(data: dict[str, Any], count: int) -> Hashable:
    """The state after the first `count` steps of a transcript (its JSON data), by the rules."""
    game = get_game(data["game"])
    return play(game, [tuple(s["moves"][r] for r in game.roles) for s in data["steps"][:count]])


def alternate(first: list[str], second: list[str]) -> list[str]:
    """Two roles' moves in turn: first[0], second[0], first[1], ..."""
    moves = []
    for i, move in enumerate(first):
        moves.append(move)
        if i < len(second):
            moves.append(second[i])
    return moves


def states_of(transcript_path: Path) -> tuple[Game, list[Hashable]]:
    """A transcript's game and its states from the start, each step's joint move applied by
    the engine itself."""
    data = json.loads(transcript_path.read_text())
    sheet = data.get("rulesheet")
    game = load_text(sheet["text"], sheet["path"]) if sheet else get_game(data["game"])
    states = [game.initial_state()]
    for step in data["steps"]:
        states.append(game.next_state(states[-1], [step["moves"][role] for role in game.roles]))
    return game, states


def crossing_masks(picture: str) -> tuple[int, int]:
    """(crosser, blocked) masks of a 4x4 picture: one word per row y = 1..4, x left to right."""
    crosser = blocked = 0
    rows = picture.split()
    assert len(rows) == 4 and all(len(row) == 4 for row in rows)
    for y, row in enumerate(rows, start=1):
        for x, symbol in enumerate(row, start=1):
            if symbol == "X":
                crosser |= 1 << crossing.bit(x, y)
            elif symbol == "#":
                blocked |= 1 << crossing.bit(x, y)
    return crosser, blocked


def winning(board: Board) -> set[tuple[str, str]]:
    """The winning cells as (row label, column label), as a reader of the board names them."""
    return {(board.rows[r][0], board.columns[c]) for r, c in board.winning}
