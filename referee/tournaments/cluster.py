"""A tournament's matches played on a Dask cluster: local worker processes, or the workers of
an existing scheduler on other machines.

The coordinator (the `referee tournament` process) keeps what it keeps without a cluster:
the schedule, the results directory and the standings. A worker is sent a match and sends
back its transcript and logs (`host.py`), which the coordinator signs and writes. Each worker
offers its cores as the Dask resource `cores`, and a match asks for the most cores a match
of the tournament takes (`playing.plan_cores`), so the scheduler never gives a worker more
matches than its cores allow.

A worker that dies is the cluster's fault, never a player's: the scheduler is told not to
retry on its own (`allowed_failures` 0), so each death reaches the coordinator, which plays
the match again from the start and counts the attempts lost in its transcript.

A venue given bundles (`bundles.py`) sends no path of its players' directories: a worker
that lacks a player's bundle says so, and is sent the job again with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from distributed import Client, Nanny, Scheduler, SpecCluster
from distributed.scheduler import KilledWorker

from referee.errors import ClusterError, ConfigError, RefereeError
from referee.players.base import Fingerprint
from referee.records.files import sync_files
from referee.records.signing import SigningKey
from referee.records.transcript import Transcript, write_transcript
from referee.sandbox.cores import CORES_VARIABLE, available_cores, format_cores, split_cores
from referee.tournaments.bundles import Bundle
from referee.tournaments.config import TournamentConfig, rulesheets_of
from referee.tournaments.host import (
    PLUGIN,
    STARTED_TOPIC,
    Job,
    MatchHost,
    MatchOrder,
    Played,
    Wanted,
    end_tournament,
    play_job,
    tournament_key,
)
from referee.tournaments.playing import pinned, plan_cores
from referee.tournaments.results import as_written, log_path, transcript_path, write_log
from referee.tournaments.runner import Observer, OpenVenue
from referee.tournaments.schedule import ScheduledMatch

# The Dask resource each worker offers: its cores.
CORES = "cores"
# A match whose worker dies this many times stops the tournament: something kills workers.
MAX_LOST_ATTEMPTS = 3
CONNECT_TIMEOUT_S = 10
WORKERS_TIMEOUT_S = 60
# A task is given about this many seconds of matches, at most MAX_BATCH of them.
BATCH_S = 0.25
MAX_BATCH = 64
LOCALHOST = "127.0.0.1"
# A local worker says nothing and samples nothing: its statistical profiler alone costs
# more than a match of instant players.
_QUIET = {
    "DASK_LOGGING__DISTRIBUTED": "critical",
    "DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED": "False",
}


@dataclass(frozen=True)
class Workers:
    """Where the matches go: `count` local worker processes, or the scheduler at `address`."""

    count: int = 0
    address: str | None = None


def on_cluster(workers: Workers, bundles: Mapping[str, Bundle] | None = None) -> OpenVenue:
    """The venue a tournament opens to play its matches on these workers; the players named
    in `bundles` run in the workers' copies of their directories."""

    async def open_venue(
        config: TournamentConfig,
        key: SigningKey,
        prints: Mapping[str, Fingerprint],
        observer: Observer,
        withdrawn: Mapping[str, str],
    ) -> ClusterVenue:
        return await ClusterVenue.open(
            workers, config, key, prints, observer, withdrawn, bundles or {}
        )

    return open_venue


class ClusterVenue:
    """The matches of a tournament played by the workers of a Dask cluster. `withdrawn`, kept
    up to date by the run, goes with every job: a withdrawn player is not tried there either."""

    def __init__(
        self,
        client: Client,
        cluster: SpecCluster | None,
        config: TournamentConfig,
        key: SigningKey,
        prints: Mapping[str, Fingerprint],
        observer: Observer,
        at_once: int,
        per_match: int,
        withdrawn: Mapping[str, str],
        bundles: Mapping[str, Bundle],
    ) -> None:
        """`at_once`: the matches the workers play at a time; `per_match`: the cores each
        match asks a worker for (0: none)."""
        self._per_match = per_match
        self._bundles = {bundle.sha256: bundle for bundle in bundles.values()}
        self._bundle_names = {name: bundle.sha256 for name, bundle in bundles.items()}
        # Sent with every job: a worker needs no copy of them on its disk.
        self._rulesheets = rulesheets_of(config)
        self._withdrawn = withdrawn
        self._client = client
        self._cluster = cluster
        self._config = config
        self._key = key
        self._observer = observer
        self._digests = {name: found.digest for name, found in prints.items()}
        # Twice the matches the workers can play at once are sent: the scheduler holds the
        # second of each place and starts it as soon as the first ends, while this process
        # writes the first one's results.
        self.capacity = 2 * at_once
        self.at_once = at_once
        # The seconds a match has taken on a worker, on average: none played yet.
        self._match_s: float | None = None
        # The matches sent and not yet begun, by id: a worker says when each begins (a job's
        # matches are played one after the other, and a job may wait in the scheduler).
        self._tournament = tournament_key(str(config.path), config.text, self._bundle_names)
        self._waiting: dict[str, ScheduledMatch] = {}
        client.subscribe_topic(STARTED_TOPIC, self._begins)

    @classmethod
    async def open(
        cls,
        workers: Workers,
        config: TournamentConfig,
        key: SigningKey,
        prints: Mapping[str, Fingerprint],
        observer: Observer,
        withdrawn: Mapping[str, str],
        bundles: Mapping[str, Bundle],
    ) -> ClusterVenue:
        """Start the local workers, or reach the scheduler; ClusterError when it cannot be."""
        cluster = None
        if workers.address is None:
            cluster = await local_cluster(workers.count, config, observer.noted)
            client = await Client(cluster, asynchronous=True)
        else:
            client = await connect(workers.address)
        try:
            # The scheduler keeps it before it sends it: a worker that dies meanwhile gets it
            # when it is started again, as every worker that joins later does.
            with contextlib.suppress(OSError):
                await client.register_plugin(MatchHost(), name=PLUGIN)
            capacity, per_match = await capacity_of(client, config, workers.address)
        except BaseException:
            await _close(client, cluster)
            raise
        return cls(
            client, cluster, config, key, prints, observer, capacity, per_match, withdrawn, bundles
        )

    def batch(self, remaining: int) -> int:
        """Enough matches for a worker to play for about BATCH_S, as they have taken so far:
        a task costs the scheduler milliseconds, a match of instant players less."""
        if self._match_s is None:
            return 1
        wanted = max(1, min(MAX_BATCH, round(BATCH_S / max(self._match_s, 1e-3))))
        # The last matches spread over all the places, not queued behind one.
        return min(wanted, -(-remaining // self.capacity))

    async def play(self, matches: Sequence[ScheduledMatch]) -> list[Transcript]:
        config = self._config
        orders = tuple(MatchOrder.of(match) for match in matches)
        # The players withdrawn when the job is sent: one withdrawn meanwhile is still tried.
        job = Job(
            str(config.path),
            config.text,
            orders,
            self._digests,
            dict(self._withdrawn),
            # All of them, not only its matches' players': they name the tournament on the
            # worker, whose players are parsed, and started, once.
            self._bundle_names,
            rulesheets=self._rulesheets,
        )
        resources = {CORES: self._per_match} if self._per_match else None
        for match in matches:
            self._waiting[match.match_id] = match
        try:
            played, lost = await self._played(job, matches, resources)
        finally:
            unsaid = [self._waiting.pop(match.match_id, None) for match in matches]
        # A match played whose worker's word has not come (or was lost) is said to have
        # begun now, before it is said to have finished.
        for waited in unsaid[: len(played)]:
            if waited is not None:
                self._observer.started(waited)
        if played:
            seconds = sum(result.seconds for result in played) / len(played)
            self._match_s = seconds if self._match_s is None else (self._match_s + seconds) / 2
        # In a thread: encoding, signing and syncing a transcript takes milliseconds, which
        # the event loop, shared with a web API (the arena's), must not wait for.
        return await asyncio.to_thread(self._write, matches, played, lost)

    def _begins(self, event: tuple[float, Any]) -> None:
        """A worker's word that a match begins (STARTED_TOPIC), on the client's loop: told
        to the observer, once, if it is one of this venue's matches in play."""
        said = event[1]
        if not isinstance(said, dict) or said.get("tournament") != self._tournament:
            return
        match = self._waiting.pop(str(said.get("match")), None)
        if match is not None:
            self._observer.started(match)

    async def _played(
        self, job: Job, matches: Sequence[ScheduledMatch], resources: dict[str, int] | None
    ) -> tuple[list[Played], int]:
        """What the workers made of `job`'s matches, and how many times a worker was lost."""
        lost = 0
        # The worker that said it lacks bundles: the job goes back to it with them.
        to: list[str] | None = None
        while True:
            future = self._client.submit(
                play_job,
                job,
                resources=resources,
                pure=False,
                workers=to,
                allow_other_workers=to is not None,
            )
            try:
                answer: list[Played] | Wanted = await future
                if isinstance(answer, Wanted):
                    if set(answer.bundles) <= job.carried.keys():
                        raise ClusterError(
                            f"{_named(matches)}: worker {answer.worker} still lacks bundles"
                            f" {', '.join(answer.bundles)} after it was sent them"
                        )
                    carried = await asyncio.to_thread(self._carried, answer.bundles)
                    job = replace(job, carried=job.carried | carried)
                    to = [answer.worker]
                    continue
                played = answer
                break
            except KilledWorker:
                lost += 1
                if lost == MAX_LOST_ATTEMPTS:
                    raise ClusterError(
                        f"match {matches[0].match_id}: its worker died {lost} times; something"
                        " on the cluster kills its workers"
                    ) from None
                self._observer.noted(
                    f"{_named(matches)}: the worker died; played again from the start"
                )
            except RefereeError:
                raise
            except Exception as error:
                raise ClusterError(
                    f"{_named(matches)}: the worker failed: {type(error).__name__}: {error}"
                ) from None
            finally:
                future.release()
        return played, lost

    def _carried(self, wanted: Sequence[str]) -> dict[str, bytes]:
        """The bytes of the bundles a worker said it lacks; ClusterError for one this venue
        has not."""
        unknown = [sha for sha in wanted if sha not in self._bundles]
        if unknown:
            raise ClusterError(f"a worker asked for bundle {unknown[0]}, which is no player's")
        return {sha: self._bundles[sha].read() for sha in wanted}

    def _write(
        self, matches: Sequence[ScheduledMatch], played: Sequence[Played], lost: int
    ) -> list[Transcript]:
        """Write each match's logs and transcript where they would be without workers."""
        config = self._config
        transcripts = []
        written: list[Path] = []
        for match, result in zip(matches, played, strict=False):
            # Each log where it would be without workers, and the transcript names it there.
            seats = [
                replace(seat, log=str(log_path(config, match, seat.role)))
                if seat.role in result.logs
                else seat
                for seat in result.transcript.seats
            ]
            transcript = replace(result.transcript, seats=seats, lost_attempts=lost)
            for role, data in result.logs.items():
                write_log(log_path(config, match, role), data)
            path = transcript_path(config, match)
            write_transcript(path, as_written(config, transcript), self._key, sync=False)
            written.append(path)
            if result.error is not None:
                sync_files(written)
                raise ClusterError(f"match {match.match_id}: the referee failed: {result.error}")
            transcripts.append(transcript)
        # The batch's transcripts reach the disk in one journal commit, not one each.
        sync_files(written)
        return transcripts

    async def close(self) -> None:
        try:
            self._client.unsubscribe_topic(STARTED_TOPIC)
            if self._cluster is None:  # a scheduler's workers outlive the tournament
                config = self._config
                key = tournament_key(str(config.path), config.text, self._bundle_names)
                await self._client.run(end_tournament, key)
        except Exception as error:  # every result is written: this is worth a note, no more
            self._observer.noted(
                f"the workers were not told the tournament is over ({type(error).__name__}:"
                f" {error}); they end its idle players when they close"
            )
        finally:
            await _close(self._client, self._cluster)


def _named(matches: Sequence[ScheduledMatch]) -> str:
    first = f"match {matches[0].match_id}"
    return first if len(matches) == 1 else f"{first} and {len(matches) - 1} more"


async def local_cluster(
    count: int, config: TournamentConfig, noted: Callable[[str], None]
) -> SpecCluster:
    """`count` worker processes on this machine, each on its own share of the cores."""
    cores = available_cores()
    # Every match of a job asks for the most cores a match of the tournament takes.
    plan = plan_cores(config, cores)
    for note in plan.notes:
        noted(note)
    per_match = plan.most
    allowed = len(cores) // per_match if per_match else count
    if count > allowed:
        noted(
            f"{count} workers are more than the {len(cores)} cores allow at {per_match} per"
            f" match: {allowed} worker{'' if allowed == 1 else 's'}"
        )
        count = allowed
    workers: dict[str, dict[str, Any]] = {}
    for index, share in enumerate(split_cores(cores, count)):
        options: dict[str, Any] = {
            "nthreads": len(share) // per_match if per_match else config.concurrency,
            "host": LOCALHOST,
            "memory_limit": 0,
            "dashboard": False,
            "silence_logs": logging.CRITICAL,
            "env": dict(_QUIET),
        }
        if per_match:
            options["resources"] = {CORES: len(share)}
            options["env"][CORES_VARIABLE] = format_cores(share)
        workers[f"referee-{index}"] = {"cls": Nanny, "options": options}
    scheduler = {
        "cls": Scheduler,
        # Its web server on a free port, never a clash with another cluster's.
        "options": {
            "host": LOCALHOST,
            "dashboard": False,
            "dashboard_address": f"{LOCALHOST}:0",
            "allowed_failures": 0,
        },
    }
    try:
        return await SpecCluster(
            workers=workers,
            scheduler=scheduler,
            asynchronous=True,
            silence_logs=logging.CRITICAL,
        )
    except (TimeoutError, OSError, RuntimeError) as error:
        raise ClusterError(f"cannot start {count} local workers: {error}") from None


async def connect(address: str) -> Client:
    """A client of the scheduler at `address`, which retries nothing on its own."""
    try:
        client = await Client(address, asynchronous=True, timeout=CONNECT_TIMEOUT_S)
    except (TimeoutError, OSError, ValueError) as error:
        raise ClusterError(f"cannot reach the Dask scheduler at {address}: {error}") from None
    try:
        await client.run_on_scheduler(_no_silent_retries)
    except BaseException:
        await client.close()
        raise
    return client


def _no_silent_retries(dask_scheduler: Scheduler) -> None:
    dask_scheduler.allowed_failures = 0


async def capacity_of(
    client: Client, config: TournamentConfig, address: str | None
) -> tuple[int, int]:
    """How many matches the cluster's workers can play at once, and the cores each takes
    (as the largest worker plans them: `host.py`)."""
    where = f"the Dask scheduler at {address}" if address else "the local cluster"
    try:
        # Dask annotates the blocking client; an asynchronous one returns an awaitable.
        await client.wait_for_workers(1, timeout=WORKERS_TIMEOUT_S)  # type: ignore[func-returns-value,misc]
    except TimeoutError:
        raise ClusterError(f"{where} has no workers after {WORKERS_TIMEOUT_S} s") from None
    identity = await client.scheduler.identity(n_workers=-1)
    workers = identity["workers"].values()
    if not pinned(config):
        return sum(worker["nthreads"] for worker in workers), 0
    offered = [int(worker.get("resources", {}).get(CORES, 0)) for worker in workers]
    try:
        per_match = plan_cores(config, range(max(offered))).most
    except ConfigError:
        per_match = 0
    if not per_match:
        raise ClusterError(
            f"no worker of {where} offers the cores a match takes ({config.path}): start each"
            f" worker with --resources {CORES}=N (N its cores) and --nthreads N"
        )
    return sum(cores // per_match for cores in offered), per_match


async def _close(client: Client, cluster: SpecCluster | None) -> None:
    await client.close()
    if cluster is not None:
        await cluster.close()  # type: ignore[misc]
