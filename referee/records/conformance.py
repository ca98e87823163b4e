"""Replay reference games and compare every legal-move set, the terminal flag and the goals.

The reference format is `tests/conformance/README.md`: one JSON game per line with,
for every step, each role's complete sorted legal moves and the joint move played, and
the final goals. Steps are numbered from 1, as in the player protocol.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from referee.errors import (
    ConformanceFileError,
    GameFault,
    MoveError,
    RulesheetError,
    UnknownGameError,
)
from referee.games import GAMES, Game, get_game, is_rulesheet
from referee.records.files import read_text


@dataclass(frozen=True)
class ReferenceStep:
    """One step of a reference game: each role's legal moves before it, the moves played,
    and in a game of imperfect information what each role perceives after them."""

    legal: Mapping[str, frozenset[str]]
    moves: Mapping[str, str]
    percepts: Mapping[str, frozenset[str]] | None = None


@dataclass(frozen=True)
class ReferenceGame:
    """One line of a reference file, checked for shape but not yet replayed."""

    game: Game
    seed: object
    steps: tuple[ReferenceStep, ...]
    terminal: bool
    goals: Mapping[str, float]


@dataclass(frozen=True)
class Mismatch:
    """A point where the rule engine and a reference game disagree."""

    file: str
    line: int
    seed: object
    step: int
    final: bool
    role: str | None
    detail: str

    def __str__(self) -> str:
        where = f"after step {self.step} (final)" if self.final else f"step {self.step}"
        role = f", role {self.role}" if self.role else ""
        return f"{self.file}:{self.line}: seed {self.seed}, {where}{role}: {self.detail}"


@dataclass(frozen=True)
class FileReport:
    """The outcome of checking one reference file."""

    path: str
    games: int
    mismatches: tuple[Mismatch, ...]

    def as_dict(self) -> dict[str, Any]:
        """The report as plain JSON-ready data."""
        return {
            "file": self.path,
            "games": self.games,
            "mismatches": [
                {k: v for k, v in asdict(m).items() if k != "file"} for m in self.mismatches
            ],
        }

    def summary(self) -> str:
        """One line: games checked and mismatches found."""
        return f"{self.path}: {self.games} games checked, {len(self.mismatches)} mismatches"


def check_file(path: str | Path, game: Game | None = None) -> FileReport:
    """Replay every game of a reference file; ConformanceFileError if a line cannot be read.

    The rules are `game` if given (a GDL rulesheet checked against a built-in game's
    references), else what each line's "game" names: a built-in game, or a rulesheet found
    by name beside the file or in a `gdl/` folder of a folder above it.
    """
    name = str(path)
    text = read_text(Path(path), ConformanceFileError)
    games = 0
    mismatches: list[Mismatch] = []
    found: dict[str, Game] = {}

    def resolve(game_id: str) -> Game:
        if game is not None:
            return game
        if game_id not in found:
            found[game_id] = get_game(_rulesheet_near(game_id, Path(path)))
        return found[game_id]

    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        reference = parse_reference(line, f"{name}:{number}", resolve)
        mismatches.extend(compare(reference, name, number))
        games += 1
    return FileReport(name, games, tuple(mismatches))


def _rulesheet_near(game_id: str, path: Path) -> str:
    """A game id as it stands, or the path of `<game_id>.kif` in the nearest folder that has it."""
    if game_id in GAMES or is_rulesheet(game_id):
        return game_id
    for folder in path.resolve().parents:
        for candidate in (folder / f"{game_id}.kif", folder / "gdl" / f"{game_id}.kif"):
            if candidate.is_file():
                return str(candidate)
    return game_id


def parse_reference(
    line: str, where: str, resolve: Callable[[str], Game] = get_game
) -> ReferenceGame:
    """One reference game from a JSON line; ConformanceFileError naming `where` and the field."""

    def fail(message: str) -> ConformanceFileError:
        return ConformanceFileError(f"{where}: {message}")

    try:
        record = json.loads(line)
    except json.JSONDecodeError as error:
        raise fail(f"malformed JSON: {error.msg} at column {error.colno}") from None
    if not isinstance(record, dict):
        raise fail("expected one JSON object per line")
    try:
        game = resolve(_field(record, "game", str, fail))
    except (UnknownGameError, RulesheetError) as error:
        raise fail(str(error)) from None
    if "seed" not in record:
        raise fail("missing field 'seed'")
    steps = []
    for index, step in enumerate(_field(record, "steps", list, fail)):
        path = f"steps[{index}]"
        _expect(step, dict, path, fail)
        legal = _by_role(game, _field(step, "legal", dict, fail, path), f"{path}.legal", list, fail)
        for role, moves_of_role in legal.items():
            for move in moves_of_role:
                _expect(move, str, f"{path}.legal.{role}[]", fail)
        moves = _by_role(game, _field(step, "moves", dict, fail, path), f"{path}.moves", str, fail)
        percepts = None
        if "percepts" in step:
            seen = _field(step, "percepts", dict, fail, path)
            percepts = _by_role(game, seen, f"{path}.percepts", list, fail)
            for role, row in percepts.items():
                for percept in row:
                    _expect(percept, str, f"{path}.percepts.{role}[]", fail)
        steps.append(
            ReferenceStep(
                {r: frozenset(m) for r, m in legal.items()},
                moves,
                None if percepts is None else {r: frozenset(p) for r, p in percepts.items()},
            )
        )
    final = _field(record, "final", dict, fail)
    terminal = _field(final, "terminal", bool, fail, "final")
    goals = _by_role(
        game, _field(final, "goals", dict, fail, "final"), "final.goals", _NUMBER, fail
    )
    return ReferenceGame(game, record["seed"], tuple(steps), terminal, goals)


def compare(reference: ReferenceGame, file: str, line: int) -> list[Mismatch]:
    """Every disagreement between the rule engine and one reference game."""
    game = reference.game
    found: list[Mismatch] = []

    def report(step: int, role: str | None, detail: str, final: bool = False) -> None:
        found.append(Mismatch(file, line, reference.seed, step, final, role, detail))

    _replay(reference, game, report)
    return found


def _replay(reference: ReferenceGame, game: Game, report: Callable[..., None]) -> None:
    """Replay one reference game, reporting each disagreement; a state the rules fail on
    (GameFault) is reported at its step, and ends the replay."""
    # Where the replay is: the step whose state is being asked about, or the end (`final`).
    number, final = 1, False
    try:
        state = game.initial_state()
        for number, step in enumerate(reference.steps, start=1):
            if game.is_terminal(state):
                report(number, None, "state is terminal; the reference plays on")
                return
            for index, role in enumerate(game.roles):
                ours = frozenset(game.legal_moves(state, index))
                if ours != step.legal[role]:
                    report(number, role, _difference(step.legal[role], ours))
            try:
                joint = tuple(game.parse_move(step.moves[role]) for role in game.roles)
                seen = game.percepts(state, joint) if step.percepts is not None else None
                state = game.next_state(state, joint)
            except (MoveError, GameFault) as error:
                report(number, None, f"cannot replay the recorded joint move: {error}")
                return
            if step.percepts is not None and seen is not None:
                for role, row in zip(game.roles, seen, strict=True):
                    if frozenset(row) != step.percepts[role]:
                        report(number, role, _difference(step.percepts[role], row, "percepts"))
        number, final = len(reference.steps), True
        _compare_end(reference, game, state, report)
    except GameFault as error:
        report(number, None, str(error), final)


def _compare_end(
    reference: ReferenceGame, game: Game, state: Hashable, report: Callable[..., None]
) -> None:
    """The terminal flag and the goals of the state the reference game ends in."""
    last = len(reference.steps)
    if game.is_terminal(state) != reference.terminal:
        expected = "terminal" if reference.terminal else "not terminal"
        report(
            last,
            None,
            f"state is {'not ' if reference.terminal else ''}terminal, expected {expected}",
            True,
        )
        return
    for role, goal in zip(game.roles, game.goals(state), strict=True):
        if goal != reference.goals[role]:
            report(last, role, f"goal expected {_number(reference.goals[role])}, got {goal}", True)


def _difference(expected: frozenset[str], actual: Iterable[str], what: str = "legal moves") -> str:
    missing = sorted(expected.difference(actual))
    extra = sorted(set(actual) - expected)
    return (
        f"{what} differ: missing {' '.join(missing) or 'none'}; extra {' '.join(extra) or 'none'}"
    )


def random_reference(game: Game, seed: int) -> dict[str, Any]:
    """One reference game of `game` played with uniformly random legal moves, as a line of
    a reference file holds it (with each step's percepts in a game of imperfect
    information): what another implementation of the same rules must reproduce."""
    rng = random.Random(seed)
    state = game.initial_state()
    steps: list[dict[str, Any]] = []
    while not game.is_terminal(state) and len(steps) < game.max_steps:
        legal = {role: sorted(game.legal_moves(state, r)) for r, role in enumerate(game.roles)}
        joint = tuple(game.random_move(state, r, rng) for r in range(len(game.roles)))
        step: dict[str, Any] = {"legal": legal, "moves": dict(zip(game.roles, joint, strict=True))}
        if game.imperfect:
            seen = game.percepts(state, joint)
            step["percepts"] = {role: list(row) for role, row in zip(game.roles, seen, strict=True)}
        steps.append(step)
        state = game.next_state(state, joint)
    terminal = game.is_terminal(state)
    goals = dict(zip(game.roles, game.goals(state), strict=True)) if terminal else {}
    return {
        "game": game.id,
        "seed": seed,
        "steps": steps,
        "final": {"terminal": terminal, "goals": goals},
    }


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


_NUMBER = (int, float)
_KIND_NAMES = {
    dict: "an object",
    list: "a list",
    str: "a string",
    bool: "true or false",
    _NUMBER: "a number",
}


def _expect(
    value: Any, kind: type | tuple[type, ...], name: str, fail: Callable[[str], Exception]
) -> Any:
    # JSON true and false are ints to isinstance; only a bool field may hold them.
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise fail(f"{name}: expected {_KIND_NAMES[kind]}")
    return value


def _field(
    record: dict[str, Any],
    key: str,
    kind: type | tuple[type, ...],
    fail: Callable[[str], Exception],
    parent: str = "",
) -> Any:
    name = f"{parent}.{key}" if parent else key
    if key not in record:
        raise fail(f"missing field {name!r}")
    return _expect(record[key], kind, name, fail)


def _by_role(
    game: Game,
    mapping: dict[str, Any],
    path: str,
    kind: type | tuple[type, ...],
    fail: Callable[[str], Exception],
) -> dict[str, Any]:
    """A role-keyed object with exactly the game's roles, each value of the given kind."""
    unknown = sorted(set(mapping) - set(game.roles))
    if unknown:
        raise fail(f"{path}: {game.id} has no role {unknown[0]!r}")
    for role in game.roles:
        if role not in mapping:
            raise fail(f"{path}: missing role {role!r}")
        _expect(mapping[role], kind, f"{path}.{role}", fail)
    return {role: mapping[role] for role in game.roles}
