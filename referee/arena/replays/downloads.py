"""A match's records to download: its transcript as the arena wrote and signed it, and its
GGP export (`referee export`'s), made from the transcript once it verifies, by a replay
worker (`replays`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from referee.arena.replays.facts import Kept
from referee.arena.replays.pool import Replays
from referee.arena.store.errors import NotFound
from referee.arena.store.home import Arena
from referee.errors import ArenaError

# What a file name offered to a browser keeps of a match's key.
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


@dataclass(frozen=True)
class Download:
    """A file to download: the name it is offered under, and its bytes."""

    name: str
    data: bytes


def transcript(arena: Arena, facts: Kept, key: str) -> Download:
    """The match's transcript file, as written: its signature checks against it."""
    found = facts.of(key)
    path = found.transcript_in(arena.directory)
    try:
        data = path.read_bytes()
    except OSError as error:
        raise NotFound(
            f"match {found.key}: its transcript cannot be read: {error.strerror}"
        ) from None
    return Download(f"{_safe(found.key)}.json", data)


def ggp_export(replays: Replays, asker: str, key: str) -> Download:
    """The match in the GGP managers' match JSON, its signed transcript inside, replayed in
    `asker`'s turn; ArenaError (409) if the transcript does not verify, for an export vouches
    for its moves."""
    replayed = replays.export(asker, key)
    if not replayed.verified:
        raise ArenaError(f"match {key[:64]!r}: its transcript does not verify, so it has no export")
    return Download(f"{_safe(replayed.export_name)}.ggp.json", replayed.export.encode())


def _safe(key: str) -> str:
    return _UNSAFE.sub("_", key)[:80] or "match"
