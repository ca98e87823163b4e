"""The built-in player names, `random`, `mcts` and `human`, and what each stands for.

`random` and `mcts` are the sample programs in `referee/players/programs/`, installed with
the package and run with this Python as any other player program is; `human` is the person
at the terminal.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from referee.errors import ConfigError, UnknownRoleError
from referee.games import Game
from referee.players.base import Player, PlayerKind, PlayerSpec
from referee.players.chance import ChancePlayer, chance_spec, is_chance
from referee.players.http import HttpPlayer
from referee.players.human import HumanPlayer, Read, terminal_reader
from referee.players.process import ProgramPlayer
from referee.players.trace import TraceChannel

# Package data: installed with the package, wherever it is installed.
PROGRAMS = Path(__file__).resolve().parent / "programs"
# What the built-in programs read besides themselves.
PACKAGE = Path(__file__).resolve().parents[1]
BUILTIN_PROGRAMS = {"random": "random_player.py", "mcts": "mcts_player.py"}
HUMAN = "human"


def player_spec(
    command: str | Sequence[str],
    name: str | None = None,
    base: Path | None = None,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> PlayerSpec:
    """The spec for a built-in name or a command; `name` defaults to the command's text.

    `base` and `cwd` are as in `PlayerSpec.from_command`.
    """
    text = command if isinstance(command, str) else shlex.join(command)
    name = name or text
    if text == HUMAN:
        return PlayerSpec.human(name)
    if text.lower().startswith(("http://", "https://")):
        return PlayerSpec.http(name, text)
    if text in BUILTIN_PROGRAMS:
        script = PROGRAMS / BUILTIN_PROGRAMS[text]
        if not script.is_file():
            raise ConfigError(f"built-in player {text!r} needs {script}, which is missing")
        spec = PlayerSpec(name, (sys.executable, str(script)), cwd, dict(env or {}))
    else:
        spec = PlayerSpec.from_command(name, command, base, cwd, env)
    # A sample program, by its name or its path, reads the protocol's syntax from the package.
    if any(Path(word).is_relative_to(PROGRAMS) for word in spec.argv):
        spec = replace(spec, files=(PACKAGE,))
    return spec


def program_spec(
    command: str | Sequence[str],
    not_a_person: str,
    name: str | None = None,
    base: Path | None = None,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> PlayerSpec:
    """The spec of a program that can be run.

    ConfigError when the command names a person (saying `not_a_person`), or a program that
    is missing.
    """
    spec = player_spec(command, name, base, cwd, env)
    if spec.kind is PlayerKind.HUMAN:
        raise ConfigError(not_a_person)
    problem = spec.missing_program()
    if problem:
        raise ConfigError(problem)
    return spec


def parse_seats(game: Game, assignments: Sequence[str]) -> list[PlayerSpec]:
    """The player of each role, in role order, from `ROLE=PLAYER` texts naming every role once."""
    seats: dict[str, PlayerSpec] = {}
    for text in assignments:
        role, sep, player = text.partition("=")
        role = role.strip()
        if not sep or not player.strip():
            raise ConfigError(f"--player {text!r}: expected ROLE=PLAYER")
        try:
            role = game.roles[game.role_index(role)]
        except UnknownRoleError as error:
            raise ConfigError(f"--player {text!r}: {error}") from None
        if is_chance(role):
            raise ConfigError(f"--player {text!r}: the referee plays role {role}, uniformly")
        if role in seats:
            raise ConfigError(f"--player {text!r}: role {role} has a player already")
        spec = player_spec(player.strip())
        problem = spec.missing_program()
        if problem:
            raise ConfigError(f"--player {text!r}: {problem}")
        seats[role] = spec
    for role in filter(is_chance, game.roles):
        seats[role] = chance_spec()
    missing = [role for role in game.roles if role not in seats]
    if missing:
        raise ConfigError(
            f"no player for role {', '.join(missing)}: add --player {missing[0]}=PLAYER"
        )
    return [seats[role] for role in game.roles]


def make_player(
    spec: PlayerSpec,
    log_path: Path,
    read: Read | None = None,
    show: Callable[[str], None] = print,
    trace: TraceChannel | None = None,
) -> Player:
    """A player for a spec: the person at the terminal, or a program in the sandbox, whose
    lines go to `trace` too when there is one."""
    if spec.kind is PlayerKind.HUMAN:
        return HumanPlayer(read or terminal_reader(), show)
    if spec.kind is PlayerKind.CHANCE:
        return ChancePlayer()
    if spec.kind is PlayerKind.HTTP:
        return HttpPlayer(spec, trace)
    return ProgramPlayer(spec, log_path, trace=trace)
