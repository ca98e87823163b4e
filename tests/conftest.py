"""The suite's fixtures and hooks; the helpers they and the tests share are in tests/support."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from referee.clock import Clocks
from referee.games import get_game, load_text
from referee.games.gdl import ground
from referee.match import MatchSetup, play_fresh
from referee.players.builtin import PROGRAMS, player_spec
from referee.players.process import ProgramPlayer
from referee.policy import Policy
from referee.records.signing import results_key
from referee.records.transcript import SCHEMA
from referee.records.verify import Outcome, verify_file
from tests.support.facilities import check_needs, missing
from tests.support.matches import TIMED_OUT_PLAY_MS
from tests.support.paths import CORPUS, CORPUS_MISSING, ROOT
from tests.support.pyenv import PyenvShim
from tests.support.tournaments import run, seeded, write_config

# The arena's tests run on each database: `database_url`, `make_arena`. The session fails
# if it leaves a process running (tests/support/leftovers.py).
pytest_plugins = [
    "tests.support.arena_databases",
    "tests.support.arena_browsing",
    "tests.support.leftovers",
]


def pytest_configure(config: pytest.Config) -> None:
    # The referee wraps its tables to COLUMNS when it is set, and pytest-xdist sets it in
    # its workers (to the terminal's width): the tests read the output of a pipe, unwrapped,
    # however the suite is run. A test that wants a width sets it.
    os.environ.pop("COLUMNS", None)


# The files that take minutes in one process (python benchmarks/suite.py): collected first,
# so that on workers (`make test`, a file to each) they start at once and the run does not
# wait on one of them at its end.
LONG_FILES = ("test_examples.py", "test_rules_limits.py", "test_gateway.py", "test_starters.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def first_if_long(item: pytest.Item) -> int:
        name = item.path.name
        return LONG_FILES.index(name) if name in LONG_FILES else len(LONG_FILES)

    items.sort(key=first_if_long)


def pytest_runtest_setup(item: pytest.Item) -> None:
    if CORPUS is None and item.get_closest_marker("corpus"):
        missing(CORPUS_MISSING)
    check_needs(item)


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

    directory = tmp_path_factory.mktemp("every-game")
    games = "[" + ", ".join(GAMES) + "]"
    config = load_config(write_config(directory, {"a": seeded(1), "b": seeded(2)}, games))
    run(config)
    return config.output


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
