"""One match played in the test's process with program players, and what must be left of it
(nothing); the match of the `timed_out_results` fixture."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from referee.clock import Clocks
from referee.games import get_game
from referee.match import MatchSetup, play_fresh
from referee.players.base import PlayerSpec
from referee.players.builtin import PROGRAMS, player_spec
from referee.players.process import ProgramPlayer
from referee.policy import Policy
from referee.records.signing import results_key
from referee.sandbox.process import group_members
from tests.support.referees import running

RANDOM = PROGRAMS / "random_player.py"
QUICK = Clocks(start_ms=2_000, play_ms=300)
# The play clock of the match forfeited on time (conftest.py's `timed_out_results`).
TIMED_OUT_PLAY_MS = 300


def program(name: str, script: Path, *args: str) -> PlayerSpec:
    return player_spec([sys.executable, str(script), *args], name)


def run(
    tmp_path: Path,
    game_id: str,
    specs: list[PlayerSpec],
    policy: Policy = Policy.FORFEIT,
    clocks: Clocks = QUICK,
) -> tuple[dict, list[ProgramPlayer]]:
    """Play one match; its transcript as read back from disk, and the players."""
    out = tmp_path / "match.json"
    players = [ProgramPlayer(spec, tmp_path / f"{spec.name}.log") for spec in specs]
    setup = MatchSetup("m-test", get_game(game_id), players, clocks, policy, seed=7)
    asyncio.run(play_fresh(setup, out, results_key(tmp_path, None)[0]))
    return json.loads(out.read_text()), players


def assert_nothing_left(players: list[ProgramPlayer], script: Path | None = None) -> None:
    for player in players:
        assert player.pid is not None
        assert group_members(player.pid) == [], f"{player.spec.name} left processes"
    if script is not None:
        assert running(script) == [], f"processes of {script.name} are still there"
