"""Each version as built, packed as a bundle (`tournaments/bundles.py`) for workers that do
not share the arena's disk: DIR/bundles/ID.tar, its hash in the version's row. The intake
packs it once the version is built; a version built before bundles were kept is packed when
a venue first needs it.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import select

from referee.arena.store.db import Version
from referee.arena.store.home import Arena
from referee.tournaments.bundles import Bundle, pack


def keep(arena: Arena, version_id: int) -> Bundle:
    """Pack the version's directory as it is now, and name the bundle in its row."""
    bundle = pack(arena.bot_directory(version_id), arena.bundle(version_id))
    with arena.database.session(write=True) as session:
        session.get_one(Version, version_id).bundle_sha256 = bundle.sha256
    return bundle


def bundles_of(arena: Arena, versions: Iterable[tuple[int, str]]) -> dict[str, Bundle]:
    """The bundle of each version of `versions` (its id and its player's name), by name:
    packed now for one that has none."""
    wanted = dict(versions)
    with arena.database.session() as session:
        rows = session.execute(
            select(Version.id, Version.bundle_sha256).where(Version.id.in_(list(wanted)))
        ).all()
    kept = {version_id: sha for version_id, sha in rows}
    found = {}
    for version_id, name in wanted.items():
        sha, path = kept.get(version_id), arena.bundle(version_id)
        found[name] = Bundle(sha, path) if sha and path.is_file() else keep(arena, version_id)
    return found


def discard(arena: Arena, version_id: int) -> None:
    arena.bundle(version_id).unlink(missing_ok=True)
