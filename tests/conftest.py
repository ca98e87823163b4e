"""Shared test helpers: where the reference games are, and playing scripted moves."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Hashable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pytest

from referee.clock import Clocks
from referee.games import NOOP, Game, get_game, load_text
from referee.games.boards import crossing
from referee.games.gdl import ground
from referee.match import MatchSetup, play_fresh
from referee.players.builtin import PROGRAMS, player_spec
from referee.players.process import ProgramPlayer
from referee.policy import Policy
from referee.records.signing import results_key
from referee.records.transcript import SCHEMA
from referee.records.verify import Outcome, verify_file

# The arena's tests run on each database: `database_url`, `make_arena`.
pytest_plugins = ["tests.arena_databases"]

ROOT = Path(__file__).resolve().parents[1]


# The reference games of the five built-in games, which the project keeps with its tests.
CONFORMANCE = ROOT / "tests" / "conformance"
REFERENCE_FILES = sorted(CONFORMANCE.glob("*.jsonl"))
# The example rulesheets the project ships, written for it.
EXAMPLES = ROOT / "matches" / "rulesheets"
# Where the public GGP corpus is looked for: a directory with gdl/ (its rulesheets) and
# conformance/gdl/ (their reference games), as ../shared/ beside the checkout is laid out.
CORPUS_SETTING = "REFEREE_GGP_CORPUS"


def missing(reason: str) -> NoReturn:
    """A system facility or data set the test needs is not here: a skip saying what is
    missing, and under CI, which has everything, a failure."""
    if os.environ.get("CI"):
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def _corpus_places() -> list[Path]:
    """The setting, else `shared/` beside this checkout or beside the local repository it
    was cloned from (a fresh clone in a temporary directory has none beside it; its origin
    may)."""
    if os.environ.get(CORPUS_SETTING):
        return [Path(os.environ[CORPUS_SETTING])]
    places = [ROOT.parent / "shared"]
    origin = subprocess.run(
        ["git", "-C", str(ROOT), "config", "--get", "remote.origin.url"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    origin = origin.removeprefix("file://")
    if origin and "://" not in origin and not origin.startswith("git@"):
        places.append((ROOT / origin).resolve().parent / "shared")
    return places


def _find_corpus() -> Path | None:
    for place in _corpus_places():
        if (place / "gdl").is_dir() and (place / "conformance" / "gdl").is_dir():
            return place
    return None


CORPUS = _find_corpus()
CORPUS_MISSING = (
    "the public GGP corpus (its rulesheets, gdl/, and their reference games, "
    "conformance/gdl/) is missing: put it at "
    + " or ".join(str(place) for place in _corpus_places())
    + f", or set {CORPUS_SETTING} to the directory that holds it"
)
# Its rulesheets and their reference games; paths that do not exist where it is missing,
# for tests marked `corpus`, which are then skipped before they look.
RULES = (CORPUS or ROOT / "no-corpus") / "gdl"
GDL_REFERENCES = sorted((RULES.parent / "conformance" / "gdl").glob("*.jsonl")) or [
    RULES.parent / "conformance" / "gdl" / "missing.jsonl"
]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "corpus: needs the public GGP corpus (REFEREE_GGP_CORPUS or ../shared)"
    )


def pytest_runtest_setup(item: pytest.Item) -> None:
    if CORPUS is None and item.get_closest_marker("corpus"):
        missing(CORPUS_MISSING)


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


@pytest.fixture
def every_transcript_verifies(tmp_path: Path) -> Iterator[None]:
    """After the test: every transcript it wrote under tmp_path replays and verifies."""
    yield
    for path in sorted(tmp_path.rglob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (ValueError, OSError):
            continue
        if isinstance(data, dict) and data.get("schema") == SCHEMA:
            verdict = verify_file(path)
            assert verdict.outcome is Outcome.VERIFIED, verdict.problem


@pytest.fixture
def quick_load(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The whole grounding, which a game that blows up (tests/rulesheets/exploding.kif)
    never finishes, given up after 1 s, not 10: it is then played one state at a time, as
    it would be."""
    monkeypatch.setattr(ground, "WHOLE_SECONDS", 1.0)
    load_text.cache_clear()
    yield
    load_text.cache_clear()


@pytest.fixture(scope="session")
def every_game_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The results directory of a tournament of every built-in game: one round, two seeded
    random players, so each game is played twice."""
    from referee.games import GAMES
    from referee.tournaments.config import load_config
    from tests.test_tournament import run, seeded, write_config

    directory = tmp_path_factory.mktemp("every-game")
    games = "[" + ", ".join(GAMES) + "]"
    config = load_config(write_config(directory, {"a": seeded(1), "b": seeded(2)}, games))
    run(config)
    return config.output


# The play clock of the match forfeited on time (`timed_out_results`).
TIMED_OUT_PLAY_MS = 300


@pytest.fixture(scope="session")
def timed_out_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A results directory of one real match forfeited on time, `timed-out.json` (signed):
    ticblock, a random player against one that sleeps 3 s at its second request, under the
    forfeit policy and a play clock of TIMED_OUT_PLAY_MS."""
    directory = tmp_path_factory.mktemp("timed-out")
    path = directory / "timed-out.json"
    late = ["late", "--at", "2", "--delay-ms", "3000"]
    commands = {
        "a": [str(PROGRAMS / "random_player.py"), "--seed", "11"],
        "sleepy": [str(ROOT / "tests" / "players" / "misbehaving.py"), *late],
    }
    players = [
        ProgramPlayer(
            player_spec([sys.executable, *command], name), path.with_suffix(f".{name}.log")
        )
        for name, command in commands.items()
    ]
    clocks = Clocks(start_ms=2_000, play_ms=TIMED_OUT_PLAY_MS)
    setup = MatchSetup(path.stem, get_game("ticblock"), players, clocks, Policy.FORFEIT, seed=5)
    asyncio.run(play_fresh(setup, path, results_key(directory, None)[0]))
    return directory


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


@dataclass(frozen=True)
class PyenvShim:
    """A shim of pyenv's, and the interpreter it stands for."""

    shim: Path
    real: Path


@pytest.fixture
def pyenv_shim(tmp_path: Path) -> PyenvShim:
    """A version manager's layout as pyenv makes it, with a shim of its kind that cannot run
    in the jail (its manager is not there) and the interpreter the shim would run (this one)."""
    root = tmp_path / "pyenv"
    real = root / "versions" / "3.99.1" / "bin" / "python3"
    real.parent.mkdir(parents=True)
    real.symlink_to(sys.executable)
    (root / "version").write_text("3.99.1\n")
    shim = root / "shims" / "python3"
    shim.parent.mkdir()
    shim.write_text(
        '#!/usr/bin/env bash\nset -e\nprogram="${0##*/}"\n'
        f'export PYENV_ROOT="{root}"\n'
        f'exec "{root}/libexec/pyenv" exec "$program" "$@"\n'
    )
    shim.chmod(0o755)
    return PyenvShim(shim, real)
