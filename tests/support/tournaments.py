"""Tournaments in tests: a config of seeded random players, a run that records what the
runner reported, the transcripts it wrote, the players' processes still living, and a
transcript made by hand for the standings."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from referee.games import get_game
from referee.records.signing import results_key
from referee.records.transcript import Fault, Seat, Transcript, read_transcript
from referee.tournaments.config import TournamentConfig
from referee.tournaments.runner import Observer, run_tournament
from referee.tournaments.schedule import ScheduledMatch
from referee.tournaments.sprt import Verdict
from tests.support.matches import RANDOM

_MARKER = "REFEREE_TEST_TOURNAMENT"


def write_config(
    directory: Path,
    players: dict[str, str],
    games: str = "[ticblock, double-tictactoe]",
    extra: str = "",
    name: str = "cup",
    play_clock: int = 2000,
) -> Path:
    path = directory / f"{name}.yaml"
    # The marker lets `referee_processes` find these players, which run in private directories.
    entries = "".join(
        f"  - name: {n}\n    command: {c}\n    env: {{{_MARKER}: '{directory}'}}\n"
        for n, c in players.items()
    )
    path.write_text(
        f"name: {name}\nseed: 5\nstart_clock: 5000\nplay_clock: {play_clock}\ngames: {games}\n"
        f"{extra}players:\n{entries}"
    )
    return path


def seeded(seed: int) -> str:
    return f"{sys.executable} {RANDOM} --seed {seed}"


class Recorder(Observer):
    def __init__(self) -> None:
        self.plan: tuple[int, int] | None = None
        self.played: list[str] = []
        self.replays: list[str] = []
        self.changes: list[str] = []
        self.verdicts: list[str] = []
        self.notes: list[str] = []

    def planned(self, total: int, done: Sequence[Transcript]) -> None:
        self.plan = (total, len(done))

    def changed(self, line: str) -> None:
        self.changes.append(line)

    def noted(self, line: str) -> None:
        self.notes.append(line)

    def finished(self, match: ScheduledMatch, transcript: Transcript) -> None:
        self.played.append(match.match_id)

    def replaced(self, problem: str) -> None:
        self.replays.append(problem)

    def stopped(self, verdict: Verdict) -> None:
        self.verdicts.append(str(verdict))


def run(config: TournamentConfig, restart: bool = False) -> Recorder:
    recorder = Recorder()
    key, _ = results_key(config.output, None)
    asyncio.run(run_tournament(config, key, recorder, restart))
    return recorder


def transcripts(directory: Path) -> dict[str, Transcript]:
    return {path.stem: read_transcript(path) for path in sorted(directory.glob("*.json"))}


def referee_processes(directory: Path) -> list[int]:
    """Living processes of the players of a tournament whose config is in `directory`."""
    marker = f"{_MARKER}={directory}\0".encode()
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                environment = Path(f"/proc/{entry.name}/environ").read_bytes()
                state = Path(f"/proc/{entry.name}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
            except OSError:
                continue
            if marker in environment and state != b"Z":
                found.append(int(entry.name))
    return found


def result(
    game: str,
    first: str,
    second: str,
    goals: tuple[int, int] | None,
    faults: tuple[tuple[int, str], ...] = (),
    reason: str = "terminal",
) -> Transcript:
    """A transcript of `first` against `second` in the game's role order, with these goals."""
    roles = get_game(game).roles
    return Transcript(
        match_id=f"{game}-{first}-{second}",
        game=game,
        seed=1,
        seats=[Seat(roles[0], first, ["x"], None), Seat(roles[1], second, ["y"], None)],
        clocks={"start_ms": 1000, "play_ms": 100, "time_bank_ms": 0},
        policy="forfeit",
        started_at="2026-11-21T00:00:00.000Z",
        ended_at="2026-11-21T00:00:01.000Z",
        start_times_ms={},
        steps=[],
        faults=[Fault(step, roles[role], kind, "") for role, (step, kind) in faults],
        end_reason=reason,
        goals=dict(zip(roles, goals, strict=True)) if goals else None,
    )
