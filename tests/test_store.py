"""A run's transcripts: whole in their files at once, on the disk together soon after."""

from __future__ import annotations

import asyncio
import errno
from pathlib import Path

import pytest

import referee.records.files
import referee.records.store
from referee.records.files import sync_files
from referee.records.store import TranscriptStore
from referee.records.transcript import Seat, Transcript, read_transcript


def _transcript(match_id: str) -> Transcript:
    return Transcript(
        match_id=match_id,
        game="quad",
        seed=1,
        seats=[Seat("red", "ann", ["x"], None), Seat("blue", "bob", ["y"], None)],
        clocks={"start_ms": 1000, "play_ms": 100, "time_bank_ms": 0},
        policy="forfeit",
        started_at="2026-11-26T00:00:00.000Z",
        ended_at="2026-11-26T00:00:01.000Z",
        start_times_ms={},
        steps=[],
        faults=[],
        end_reason="terminal",
        goals={"red": 100, "blue": 0},
    )


@pytest.fixture
def synced(monkeypatch: pytest.MonkeyPatch) -> list[list[Path]]:
    """The paths of each group the store syncs, in order; the files are synced as usual."""
    groups: list[list[Path]] = []

    def sync(paths: list[Path]) -> None:
        groups.append(list(paths))
        sync_files(paths)

    monkeypatch.setattr(referee.records.store, "sync_files", sync)
    return groups


@pytest.fixture
def fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every file descriptor given to fsync by the writes."""
    calls: list[int] = []
    real = referee.records.files.os.fsync

    def fsync(descriptor: int) -> None:
        calls.append(descriptor)
        real(descriptor)

    monkeypatch.setattr(referee.records.files.os, "fsync", fsync)
    return calls


def test_transcripts_are_whole_at_once_and_synced_together_by_close(
    tmp_path: Path, synced: list[list[Path]], fsyncs: list[int]
) -> None:
    paths = [tmp_path / "r" / f"m{index}.json" for index in range(3)]

    async def run() -> None:
        store = TranscriptStore(None, sync_delay_s=3600)
        for index, path in enumerate(paths):
            await store.store(path, _transcript(f"m{index}"))
            # Readable the moment the store returns: a referee killed now loses nothing.
            assert read_transcript(path).match_id == f"m{index}"
        assert synced == [] and fsyncs == []
        await store.close()

    asyncio.run(run())
    assert synced == [paths]
    assert len(fsyncs) == 3 + 1  # each file, and their directory once


def test_the_match_that_ends_once_the_oldest_has_waited_its_delay_syncs_the_group(
    tmp_path: Path, synced: list[list[Path]]
) -> None:
    async def run() -> None:
        store = TranscriptStore(None, sync_delay_s=0.05)
        await store.store(tmp_path / "a.json", _transcript("a"))
        await store.store(tmp_path / "b.json", _transcript("b"))
        assert synced == []
        await asyncio.sleep(0.06)
        await store.store(tmp_path / "c.json", _transcript("c"))
        # On the disk when the store returns: between matches, not while the next one plays.
        assert synced == [[tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.json"]]
        await store.close()

    asyncio.run(run())
    assert len(synced) == 1


def test_a_transcript_no_later_match_syncs_is_synced_by_the_latest(
    tmp_path: Path, synced: list[list[Path]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(referee.records.store, "SYNC_LATEST_S", 0.01)

    async def run() -> None:
        store = TranscriptStore(None, sync_delay_s=3600)
        await store.store(tmp_path / "a.json", _transcript("a"))
        while not synced:
            await asyncio.sleep(0.01)
        await store.close()

    asyncio.run(run())
    assert synced == [[tmp_path / "a.json"]]


def test_with_no_delay_each_transcript_is_on_the_disk_when_stored(
    tmp_path: Path, synced: list[list[Path]], fsyncs: list[int]
) -> None:
    async def run() -> None:
        store = TranscriptStore(None, sync_delay_s=0)
        await store.store(tmp_path / "a.json", _transcript("a"))
        assert len(fsyncs) == 1
        await store.close()

    asyncio.run(run())
    assert synced == []
    assert read_transcript(tmp_path / "a.json").match_id == "a"


def test_a_failed_sync_is_raised_by_the_next_store_or_by_close(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(referee.records.store, "SYNC_LATEST_S", 0.01)

    def broken(paths: list[Path]) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(referee.records.store, "sync_files", broken)

    async def run() -> None:
        store = TranscriptStore(None, sync_delay_s=3600)
        await store.store(tmp_path / "a.json", _transcript("a"))
        with pytest.raises(OSError, match="Input/output error"):
            await store.close()
        # Synced by the latest, no store waiting on it: the next store says it failed.
        later = TranscriptStore(None, sync_delay_s=3600)
        await later.store(tmp_path / "b.json", _transcript("b"))
        await asyncio.sleep(0.05)
        with pytest.raises(OSError, match="Input/output error"):
            await later.store(tmp_path / "c.json", _transcript("c"))

    asyncio.run(run())


def test_close_while_cancelled_still_syncs(tmp_path: Path, synced: list[list[Path]]) -> None:
    async def run() -> None:
        store = TranscriptStore(None, sync_delay_s=3600)
        await store.store(tmp_path / "a.json", _transcript("a"))
        closing = asyncio.create_task(store.close())
        await asyncio.sleep(0)
        closing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await closing

    asyncio.run(run())  # the loop's end waits for the thread the sync runs in
    assert synced == [[tmp_path / "a.json"]]
