"""A player's directory sent to workers as a bundle: packed the same way every time, checked
against its hash and unpacked into the worker's cache, where the player runs; a worker
that lacks it asks, one sent bytes that are not the ones named refuses them in one line."""

from __future__ import annotations

import asyncio
import hashlib
import io
import os
import shutil
import sys
import tarfile
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from referee.errors import ClusterError
from referee.games import RULESHEETS
from referee.players import base
from referee.players.base import fingerprint
from referee.players.builtin import program_spec
from referee.tournaments.bundles import BundleCache, pack, packed
from referee.tournaments.config import load_config, rulesheets_of
from referee.tournaments.host import BUNDLE_CACHE, Job, MatchHost, MatchOrder, Played, Wanted
from referee.tournaments.schedule import schedule
from tests.support.referees import MISBEHAVING
from tests.support.tournaments import seeded

WORKER = "tcp://test-worker:1"


def a_tree(root: Path) -> Path:
    (root / "lib").mkdir(parents=True)
    (root / "bot.py").write_text("print('hello')\n")
    (root / "run").write_text("#!/bin/sh\n")
    (root / "run").chmod(0o755)
    (root / "lib" / "data.bin").write_bytes(bytes(range(256)))
    (root / "here").symlink_to("lib/data.bin")
    (root / "python").symlink_to(sys.executable)
    return root


def test_a_tree_packs_to_the_same_bytes_and_unpacks_as_it_was(tmp_path: Path) -> None:
    first = pack(a_tree(tmp_path / "a"), tmp_path / "a.tar")
    # The same tree elsewhere, made later: its times and place are not in the bundle.
    os.utime(tmp_path / "a" / "bot.py", (1, 1))
    second = pack(a_tree(tmp_path / "b"), tmp_path / "b.tar")
    assert first.sha256 == second.sha256 == hashlib.sha256(first.read()).hexdigest()
    # Streamed to its file, or held in memory for a worker: the same bytes.
    assert packed(tmp_path / "b") == first.read()
    cache = BundleCache(tmp_path / "cache")
    assert cache.find(first.sha256) is None
    unpacked = cache.put(first.sha256, first.read(), "worker w")
    assert unpacked == tmp_path / "cache" / first.sha256 == cache.find(first.sha256)
    assert (unpacked / "lib" / "data.bin").read_bytes() == bytes(range(256))
    assert os.access(unpacked / "run", os.X_OK) and not os.access(unpacked / "bot.py", os.X_OK)
    assert os.readlink(unpacked / "here") == "lib/data.bin"
    assert os.readlink(unpacked / "python") == sys.executable
    assert (unpacked.stat().st_mode & 0o777) == 0o755


def test_a_bundle_changed_since_it_was_packed_is_not_sent(tmp_path: Path) -> None:
    bundle = pack(a_tree(tmp_path / "a"), tmp_path / "a.tar")
    with open(bundle.path, "r+b") as data:
        data.seek(1024)
        data.write(b"X")
    with pytest.raises(
        ClusterError, match=rf"a.tar: changed since it was packed \(not {bundle.sha256}\)"
    ):
        bundle.read()


def test_bytes_that_are_not_the_bundle_named_are_refused_and_nothing_is_kept(
    tmp_path: Path,
) -> None:
    bundle = pack(a_tree(tmp_path / "a"), tmp_path / "a.tar")
    other = pack(a_tree(tmp_path / "b") / "lib", tmp_path / "b.tar")
    cache = BundleCache(tmp_path / "cache")
    with pytest.raises(ClusterError) as error:
        cache.put(bundle.sha256, other.read(), "worker w")
    assert str(error.value) == (
        f"worker w: the bundle sent as {bundle.sha256} hashes to {other.sha256}:"
        " refused, not unpacked"
    )
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())


def test_a_member_leading_out_of_the_bundle_is_refused(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo("../outside")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"hi"))
    data = buffer.getvalue()
    sha = hashlib.sha256(data).hexdigest()
    cache = BundleCache(tmp_path / "cache")
    with pytest.raises(ClusterError, match=rf"^worker w: bundle {sha}: cannot be unpacked: "):
        cache.put(sha, data, "worker w")
    assert not (tmp_path / "outside").exists()
    assert list((tmp_path / "cache").iterdir()) == []


def on_a_host(job: Job, local: Path) -> list[Played] | Wanted:
    """What a worker whose local directory is `local` answers a job."""

    async def hosted() -> list[Played] | Wanted:
        plugin = MatchHost()
        worker: Any = SimpleNamespace(address=WORKER, local_directory=str(local))
        plugin.setup(worker)
        try:
            return await plugin.play(job)
        finally:
            await plugin.teardown(worker)

    return asyncio.run(hosted())


def test_a_worker_asks_for_the_bundle_it_lacks_and_runs_the_player_in_its_copy(
    tmp_path: Path,
) -> None:
    coordinator = tmp_path / "coordinator"
    home = coordinator / "bot"
    home.mkdir(parents=True)
    shutil.copy(MISBEHAVING, home / "bot.py")
    (coordinator / "rules").mkdir()
    shutil.copy(RULESHEETS / "ticblock.kif", coordinator / "rules" / "tb.kif")
    path = coordinator / "cup.yaml"
    path.write_text(
        "name: cup\nseed: 5\nstart_clock: 5000\nplay_clock: 2000\ngames: [rules/tb.kif]\n"
        "players:\n"
        f"  - {{name: a, command: {sys.executable} bot.py environment, cwd: {home}}}\n"
        f"  - {{name: b, command: {seeded(2)}}}\n"
    )
    config = load_config(path)
    digests = {entrant.name: fingerprint(entrant.spec).digest for entrant in config.players}
    bundle = pack(home, tmp_path / "bot.tar")
    matches = tuple(MatchOrder.of(match) for match in schedule(config))[:2]
    job = Job(
        str(path),
        path.read_text(),
        matches,
        digests,
        bundles={"a": bundle.sha256},
        rulesheets=rulesheets_of(config),
    )
    # The worker has none of the coordinator's disk: not the bot's directory, not the rules.
    data = bundle.read()
    shutil.rmtree(coordinator)
    local = tmp_path / "worker"
    assert on_a_host(job, local) == Wanted(WORKER, (bundle.sha256,))
    played = on_a_host(replace(job, carried={bundle.sha256: data}), local)
    assert isinstance(played, list) and len(played) == 2
    copy = local / BUNDLE_CACHE / bundle.sha256
    for result in played:
        assert result.transcript.complete and result.error is None
        assert result.transcript.game == "tb"
        role = next(seat.role for seat in result.transcript.seats if seat.player == "a")
        assert f"cwd={copy}\n" in result.logs[role].decode()
    # Kept: the next job names it and carries nothing.
    assert isinstance(on_a_host(job, local), list)


def test_a_worker_sent_bytes_that_are_not_the_bundle_refuses_in_one_line(
    tmp_path: Path,
) -> None:
    home = tmp_path / "bot"
    home.mkdir()
    shutil.copy(MISBEHAVING, home / "bot.py")
    path = tmp_path / "cup.yaml"
    path.write_text(
        "name: cup\nstart_clock: 5000\nplay_clock: 2000\ngames: [ticblock]\nplayers:\n"
        f"  - {{name: a, command: {sys.executable} bot.py, cwd: {home}}}\n"
        f"  - {{name: b, command: {seeded(2)}}}\n"
    )
    config = load_config(path)
    sha = pack(home, tmp_path / "bot.tar").sha256
    job = Job(
        str(path),
        path.read_text(),
        tuple(MatchOrder.of(match) for match in schedule(config))[:1],
        {},
        bundles={"a": sha},
        carried={sha: b"not the bot"},
    )
    with pytest.raises(ClusterError) as error:
        on_a_host(job, tmp_path / "worker")
    got = hashlib.sha256(b"not the bot").hexdigest()
    assert str(error.value) == (
        f"worker {WORKER}: the bundle sent as {sha} hashes to {got}: refused, not unpacked"
    )


def test_a_players_copy_elsewhere_has_the_fingerprint_of_the_original(tmp_path: Path) -> None:
    """A worker runs its copy of a bot: the command's own directory (`java -cp .`) is named
    from where it runs, its files by their contents."""
    first, second, changed = (a_tree(tmp_path / name) for name in ("a", "b", "c"))
    (changed / "bot.py").write_text("print('changed')\n")

    def digest(directory: Path) -> str:
        spec = program_spec(f"{sys.executable} bot.py .", "-", "p", directory, directory)
        assert str(directory) in spec.command  # the directory, named by its path to run
        return fingerprint(spec).digest

    assert digest(first) == digest(second) != digest(changed)


def test_players_fingerprinted_together_hash_their_interpreter_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A field of thousands runs one interpreter: fingerprinted together, it is read once,
    and each fingerprint is the one it has alone."""
    trees = [a_tree(tmp_path / name) for name in ("a", "b", "c")]
    specs = [program_spec(f"{sys.executable} bot.py", "-", "p", tree, tree) for tree in trees]
    alone = [fingerprint(spec) for spec in specs]
    read: list[Path] = []
    sha256 = base._sha256
    monkeypatch.setattr(base, "_sha256", lambda path: read.append(path) or sha256(path))
    hashed: dict[str, str] = {}
    together = [fingerprint(spec, hashed) for spec in specs]
    assert together == alone
    assert read.count(Path(sys.executable)) == 1
