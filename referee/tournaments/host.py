"""A cluster worker's side of a tournament: it plays the matches it is given and sends back
what happened, writing nothing that the coordinator needs.

The matches are played on the worker's own event loop, as asynchronous tasks: a second loop
in a thread of its own cost each match the hand-overs between the two and their contention
for the interpreter (measured: 1 to 1.5 ms of CPU time a match of instant players, a tenth
of what the match costs). On that loop each worker keeps a player pool per tournament
(processes reused between matches, as in the referee process) and its cores, a set per
match. The loop runs in the worker's main thread, so the players started from it die with
the worker: the kernel kills each one when that thread is gone (PR_SET_PDEATHSIG), and with
it its jail's PID namespace. A worker that starts after one was killed removes what the
killed one left (its players' cgroups and directories).

A player whose directory the job names by a bundle (`bundles.py`) runs in the worker's copy
of it, in its cache: a worker needs no disk shared with the coordinator.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from distributed import Worker, WorkerPlugin, get_worker

from referee.errors import ClusterError, PlayerRefused
from referee.pauses import between_matches, short_pauses
from referee.players.base import Fingerprint, fingerprint
from referee.players.chance import CHANCE_NAME
from referee.players.log import LOG_LIMIT
from referee.records.transcript import BookLine, Transcript
from referee.sandbox.cores import CorePool, available_cores
from referee.sandbox.isolation import remove_left_behind
from referee.sandbox.spawn import become_subreaper
from referee.tournaments.bundles import BundleCache
from referee.tournaments.config import TournamentConfig, parse_config
from referee.tournaments.playing import plan_cores, play_scheduled
from referee.tournaments.pool import PlayerPool
from referee.tournaments.schedule import ScheduledMatch

# The name the plugin has on every worker.
PLUGIN = "referee"
# A log is capped as it is written; this bounds what is read of one all the same.
_LOG_READ_LIMIT = 2 * LOG_LIMIT
# Where in its local directory a worker keeps the bundles it was sent.
BUNDLE_CACHE = "referee-bundles"
# The Dask topic on which a worker says that a match of a job begins, `{"tournament": KEY,
# "match": ID}`: a job's matches are played one after the other, so its coordinator knows
# which one is being played (`cluster.py`).
STARTED_TOPIC = "referee-match-started"


@dataclass(frozen=True)
class MatchOrder:
    """A match as a worker is sent it: what its config does not say. The game's rules and
    clocks are the config's, read on the worker; a schedule's match or a ladder's is sent
    alike, so a worker plays any match of the players its config names."""

    match_id: str
    game_id: str
    players: tuple[str, ...]
    round: int
    seed: int
    opening: int
    book: BookLine | None = None

    @classmethod
    def of(cls, match: ScheduledMatch) -> MatchOrder:
        return cls(
            match.match_id,
            match.game.id,
            match.players,
            match.round,
            match.seed,
            match.opening,
            match.book,
        )

    def rebuild(self, config: TournamentConfig, where: str) -> ScheduledMatch:
        """The match under `config`; ClusterError, naming `where`, when the config has not
        its game or its players."""
        settings = config.settings(self.game_id)
        if settings is None:
            raise ClusterError(
                f"{where}: {self.match_id} is not a match of {config.path}: no game {self.game_id}"
            )
        entrants = {entrant.name for entrant in config.players} | {CHANCE_NAME}
        strangers = [name for name in self.players if name not in entrants]
        if strangers or len(self.players) != len(settings.game.roles):
            who = f"no player {strangers[0]}" if strangers else "not its game's seats"
            raise ClusterError(f"{where}: {self.match_id} is not a match of {config.path}: {who}")
        return ScheduledMatch(
            self.match_id,
            settings.game,
            self.players,
            self.round,
            settings.clocks,
            self.seed,
            self.opening,
            self.book,
            settings.max_steps,
            config.seat_clocks(settings.clocks, self.players),
        )


@dataclass(frozen=True)
class Job:
    """Matches for a worker, played one after the other on the same cores: the tournament's
    config (its path, where the players' files are on every machine, and its text), the
    matches, the players' fingerprints as the coordinator took them, and the players it has
    withdrawn (each name and why), which are not started. `bundles` names the bundle of each
    player that runs in its worker's copy of its directory; `carried` holds the bytes of
    those a worker said it lacks; `rulesheets`, the text of its games' rulesheets by path,
    which a worker reads from there, not from its disk."""

    config_path: str
    config_text: str
    matches: tuple[MatchOrder, ...]
    digests: dict[str, str]
    withdrawn: dict[str, str] = field(default_factory=dict)
    bundles: dict[str, str] = field(default_factory=dict)
    carried: dict[str, bytes] = field(default_factory=dict)
    rulesheets: dict[str, str] = field(default_factory=dict)

    @property
    def tournament(self) -> str:
        return tournament_key(self.config_path, self.config_text, self.bundles)


def tournament_key(
    config_path: str, config_text: str, bundles: dict[str, str] | None = None
) -> str:
    """What names a tournament on a worker: its config's path and text, and its players'
    bundles."""
    named = "".join(f"\0{name}\0{sha}" for name, sha in sorted((bundles or {}).items()))
    return hashlib.sha256(f"{config_path}\0{config_text}{named}".encode()).hexdigest()


@dataclass(frozen=True)
class Wanted:
    """A worker's answer to a job whose bundles it lacks: send them."""

    worker: str
    bundles: tuple[str, ...]


@dataclass(frozen=True)
class Played:
    """What a worker sends back: the transcript, the log of each role that has one (where
    the transcript names the worker's file), and the referee's failure, if it failed after
    the match was recorded."""

    transcript: Transcript
    logs: dict[str, bytes] = field(default_factory=dict)
    error: str | None = None
    # How long the worker took, its players' start included.
    seconds: float = 0.0


@dataclass
class _Tournament:
    config: TournamentConfig
    prints: dict[str, Fingerprint]
    pool: PlayerPool


class MatchHost(WorkerPlugin):
    """The referee in a worker process: its event loop, cores and player pools."""

    name = PLUGIN

    def __init__(self) -> None:
        self._cores = CorePool(())
        self._tournaments: dict[str, _Tournament] = {}
        self._address = ""
        self._logs = Path()
        self._bundles = BundleCache(Path())
        self._pauses = contextlib.ExitStack()
        self._worker: Worker | None = None

    def setup(self, worker: Worker) -> None:
        self._worker = worker
        # First: what its players and the sandbox's probes leave is then this worker's to
        # reap, not a process's above it that does not know of them.
        become_subreaper()
        remove_left_behind()
        self._address = worker.address
        # The players' logs, each read and removed after its match.
        self._logs = Path(tempfile.mkdtemp(prefix="referee-logs-"))
        self._cores = CorePool(available_cores())
        self._bundles = BundleCache(Path(worker.local_directory) / BUNDLE_CACHE)
        # Its full collections between its matches, as in the referee process.
        self._pauses.enter_context(short_pauses())

    async def teardown(self, worker: Worker) -> None:
        for tournament in list(self._tournaments):
            await self.end(tournament)
        shutil.rmtree(self._logs, ignore_errors=True)
        self._pauses.close()

    async def play(self, job: Job) -> list[Played] | Wanted:
        """Play a job's matches: what each gave, up to the first in which the referee
        failed; or the bundles the job names that this worker lacks."""
        wanted = await asyncio.to_thread(self._unbundle, job)
        if wanted:
            return Wanted(self._address, wanted)
        tournament = self._tournament(job)
        config = tournament.config
        matches = [order.rebuild(config, f"worker {self._address}") for order in job.matches]
        # What the coordinator asked the scheduler for, planned as here (cluster.py).
        most = plan_cores(config, self._cores.cores).most
        cores = self._cores.take(most) if most else None
        played: list[Played] = []
        try:
            for match in matches:
                self._starting(job.tournament, match)
                played.append(await self._play(tournament, match, cores, job.withdrawn))
                if played[-1].error is not None:
                    break
        finally:
            if cores is not None:
                self._cores.give(cores)
        return played

    def _starting(self, tournament: str, match: ScheduledMatch) -> None:
        """Say that `match` of `tournament` begins (STARTED_TOPIC): a word, never worth the
        match if it cannot be said."""
        if self._worker is not None:
            with contextlib.suppress(Exception):
                self._worker.log_event(
                    STARTED_TOPIC, {"tournament": tournament, "match": match.match_id}
                )

    async def _play(
        self,
        tournament: _Tournament,
        match: ScheduledMatch,
        cores: frozenset[int] | None,
        withdrawn: dict[str, str],
    ) -> Played:
        config = tournament.config
        began = time.monotonic()
        logs = [
            self._logs / f"{match.match_id}.{index}.log" for index in range(len(match.game.roles))
        ]
        recorded: list[Transcript] = []

        async def keep(transcript: Transcript) -> None:
            recorded.append(transcript)

        error = None
        try:
            await play_scheduled(
                config,
                match,
                tournament.pool,
                tournament.prints,
                lambda role: logs[match.game.roles.index(role)],
                keep,
                cores,
                withdrawn,
            )
        except Exception as failure:  # the transcript of what was decided goes back first
            if not recorded:
                raise
            error = f"{type(failure).__name__}: {failure}"
        finally:
            written = {
                role: _read_log(log) for role, log in zip(match.game.roles, logs, strict=True)
            }
            between_matches()
        sent = {role: data for role, data in written.items() if data is not None}
        return Played(recorded[0], sent, error, time.monotonic() - began)

    def _unbundle(self, job: Job) -> tuple[str, ...]:
        """Unpack the bundles the job carries; those it names that are still lacking."""
        where = f"worker {self._address}"
        for sha, data in job.carried.items():
            self._bundles.put(sha, data, where)
        return tuple(sorted({s for s in job.bundles.values() if self._bundles.find(s) is None}))

    def _tournament(self, job: Job) -> _Tournament:
        """The tournament of a job, read once, and checked against the coordinator's."""
        found = self._tournaments.get(job.tournament)
        if found is None:
            cwds = {name: self._bundles.root / sha for name, sha in job.bundles.items()}
            config = parse_config(Path(job.config_path), job.config_text, cwds, job.rulesheets)
            prints = {entrant.name: fingerprint(entrant.spec) for entrant in config.players}
            found = _Tournament(config, prints, PlayerPool(config.players))
            self._tournaments[job.tournament] = found
        for name, digest in job.digests.items():
            here = found.prints.get(name)
            if here is None or here.digest != digest:
                raise PlayerRefused(
                    f"worker {self._address}: player {name}: its command or program files here"
                    " are not those of the coordinator's machine",
                    name,
                )
        return found

    async def end(self, tournament: str) -> None:
        """End the player processes a tournament keeps here; it is over."""
        found = self._tournaments.pop(tournament, None)
        if found is not None:
            await found.pool.close()


def _read_log(path: Path) -> bytes | None:
    """A log's bytes, and the file gone; None when the player wrote none."""
    try:
        with open(path, "rb") as log:
            return log.read(_LOG_READ_LIMIT)
    except OSError:
        return None
    finally:
        path.unlink(missing_ok=True)


def _host(worker: Worker) -> MatchHost:
    host = worker.plugins.get(PLUGIN)
    if not isinstance(host, MatchHost):
        raise ClusterError(f"worker {worker.address} has no referee: the coordinator registers it")
    return host


async def play_job(job: Job) -> list[Played] | Wanted:
    """The task a worker runs, on its event loop: a job's matches."""
    return await _host(get_worker()).play(job)


async def end_tournament(tournament: str, dask_worker: Worker) -> None:
    """Run on every worker (Dask names the worker) when a tournament is over: its idle
    players end."""
    await _host(dask_worker).end(tournament)
