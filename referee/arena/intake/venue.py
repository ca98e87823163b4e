"""Where the intake builds and validates a version: in this process, or on the venue's
workers, the ladder's. A worker is sent the version as a bundle (`tournaments/bundles.py`),
never a path on the arena's disk: the unpacked submission to build, sending back the
directory it built; the built bundle to validate, which it keeps in its cache, where the
ladder's matches find it.

A worker lost under a build or a validation is the arena's failure, not the bot's:
`WorkerLost`, and the intake takes the version up again.
"""

from __future__ import annotations

import asyncio
import hashlib
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from distributed import Client, get_worker
from distributed.scheduler import KilledWorker

from referee.arena.intake.build import BuildResult, build
from referee.arena.intake.validating import Validated, validate_version
from referee.arena.store.config import BuildLimits
from referee.arena.store.db import STEP_LOG_LIMIT
from referee.arena.store.home import Arena
from referee.errors import ClusterError
from referee.tournaments.bundles import Bundle, BundleCache, packed, unpack
from referee.tournaments.cluster import CORES, capacity_of, connect
from referee.tournaments.config import parse_config, rulesheets_of
from referee.tournaments.host import BUNDLE_CACHE, PLUGIN, MatchHost

T = TypeVar("T")


class WorkerLost(ClusterError):
    """The worker of a build or a validation was lost or failed (`counts`: the version's
    tries count it), or the workers cannot be reached or used (they do not)."""

    def __init__(self, message: str, counts: bool = True) -> None:
        super().__init__(message)
        self.counts = counts


class IntakeVenue(Protocol):
    async def build(
        self, directory: Path, command: str, limits: BuildLimits
    ) -> tuple[BuildResult, str]:
        """Build the version in `directory` (left as built): how it went, and its log."""

    async def validate(
        self,
        directory: Path,
        bundle: Bundle,
        run: str,
        player_name: str,
        progress: Callable[[str], None],
    ) -> Validated:
        """Validate the built version (in `directory` here, `bundle` on a worker)."""

    async def close(self) -> None: ...


class HereIntake:
    """Builds and validations in this process."""

    def __init__(self, arena: Arena) -> None:
        self._arena = arena

    async def build(
        self, directory: Path, command: str, limits: BuildLimits
    ) -> tuple[BuildResult, str]:
        with tempfile.TemporaryDirectory(prefix="referee-intake-") as scratch:
            log = Path(scratch) / "build.log"
            result = await build(directory, command, limits, log)
            return result, read_log(log)

    async def validate(
        self,
        directory: Path,
        bundle: Bundle,
        run: str,
        player_name: str,
        progress: Callable[[str], None],
    ) -> Validated:
        config = self._arena.config
        return await validate_version(
            directory,
            run,
            player_name,
            config.tournament,
            config.validate_matches_per_role,
            {self._arena.directory: "arena"},
            progress,
        )

    async def close(self) -> None:
        pass


@dataclass(frozen=True)
class BuildOrder:
    """A build for a worker: the version's unpacked directory as a bundle, and how to build."""

    source: bytes
    sha256: str
    command: str
    limits: BuildLimits


@dataclass(frozen=True)
class Built:
    """A worker's build: how it went, its log, and the directory it built, packed."""

    result: BuildResult
    log: str
    bundle: bytes | None


@dataclass(frozen=True)
class ValidateOrder:
    """A validation for a worker: the built bundle, how the bot runs, and the arena's
    tournament keys (its config's path and text) whose games and limits it is validated in."""

    bundle: bytes
    sha256: str
    run: str
    player_name: str
    config_path: str
    config_text: str
    matches_per_role: int
    rulesheets: dict[str, str]


class WorkersIntake:
    """Builds and validations on the workers of the Dask scheduler at `address`."""

    def __init__(self, arena: Arena, address: str) -> None:
        self._arena = arena
        self._address = address
        self._client: Client | None = None
        self._resources: dict[str, float] | None = None

    async def build(
        self, directory: Path, command: str, limits: BuildLimits
    ) -> tuple[BuildResult, str]:
        data = await asyncio.to_thread(packed, directory)
        sha = hashlib.sha256(data).hexdigest()
        built: Built = await self._run(build_on_worker, BuildOrder(data, sha, command, limits))
        if built.bundle is not None:
            await asyncio.to_thread(_replace_with, directory, built.bundle)
        return built.result, built.log

    async def validate(
        self,
        directory: Path,
        bundle: Bundle,
        run: str,
        player_name: str,
        progress: Callable[[str], None],
    ) -> Validated:
        config = self._arena.config
        order = ValidateOrder(
            await asyncio.to_thread(bundle.read),
            bundle.sha256,
            run,
            player_name,
            str(config.path),
            config.tournament.text,
            config.validate_matches_per_role,
            rulesheets_of(config.tournament),
        )
        validated: Validated = await self._run(validate_on_worker, order)
        progress(validated.log)
        return validated

    async def _run(self, task: Callable[..., Any], order: Any) -> Any:
        client = await self._connected()
        future = client.submit(task, order, resources=self._resources, pure=False)
        try:
            return await future
        except KilledWorker:
            raise WorkerLost("its worker was lost") from None
        except ClusterError as error:  # a worker's refusal: a bundle it could not use
            raise WorkerLost(str(error)) from None
        except (OSError, TimeoutError) as error:
            await self._drop()
            raise WorkerLost(f"the workers cannot be reached ({error})", counts=False) from None
        finally:
            future.release()

    async def _connected(self) -> Client:
        if self._client is None:
            try:
                client = await connect(self._address)
            except ClusterError as error:
                raise WorkerLost(str(error), counts=False) from None
            try:
                await client.register_plugin(MatchHost(), name=PLUGIN)
                _, per_match = await capacity_of(
                    client, self._arena.config.tournament, self._address
                )
            except ClusterError as error:
                await client.close()
                raise WorkerLost(str(error), counts=False) from None
            except BaseException:
                await client.close()
                raise
            self._resources = {CORES: per_match} if per_match else None
            self._client = client
        return self._client

    async def _drop(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    async def close(self) -> None:
        await self._drop()


def _replace_with(directory: Path, data: bytes) -> None:
    """The version's directory made the one its worker built."""
    shutil.rmtree(directory)
    unpack(data, hashlib.sha256(data).hexdigest(), directory, "the intake")


def read_log(path: Path) -> str:
    try:
        return path.read_bytes()[: STEP_LOG_LIMIT + 1024].decode("utf-8", "replace")
    except OSError:
        return ""


def _where() -> tuple[str, Path]:
    worker = get_worker()
    return f"worker {worker.address}", Path(worker.local_directory)


async def build_on_worker(order: BuildOrder) -> Built:
    """The task a worker runs for a build: in a directory of its own, sent back packed."""
    where, local = _where()
    with tempfile.TemporaryDirectory(prefix="referee-build-", dir=local) as scratch:
        directory = Path(scratch) / "bot"
        await asyncio.to_thread(unpack, order.source, order.sha256, directory, where)
        log = Path(scratch) / "build.log"
        result = await build(directory, order.command, order.limits, log)
        bundle = await asyncio.to_thread(packed, directory) if result.passed else None
        return Built(result, read_log(log), bundle)


async def validate_on_worker(order: ValidateOrder) -> Validated:
    """The task a worker runs for a validation: the bundle kept in its cache."""
    where, local = _where()
    cache = BundleCache(local / BUNDLE_CACHE)
    directory = await asyncio.to_thread(cache.put, order.sha256, order.bundle, where)
    tournament = parse_config(
        Path(order.config_path), order.config_text, rulesheets=order.rulesheets
    )
    return await validate_version(
        directory,
        order.run,
        order.player_name,
        tournament,
        order.matches_per_role,
        {local: "worker"},
    )
