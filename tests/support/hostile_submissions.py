"""Submissions for the arena's tests: a bot's archive (bot.yaml, its program, the attack and
what it aims at), queued as the API queues it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sqlalchemy import select

from referee.arena.store.db import Author, Bot, Version
from referee.arena.store.home import Arena
from referee.players.starter import STARTERS
from tests.support.archives import Entry, tar

RANDOM_PLAYER = STARTERS / "random_player.py"
# The attacking bot's program, which goes into its archive.
ATTACK = Path(__file__).resolve().parents[1] / "arena" / "hostile" / "attack.py"
# The system's Python by its path: a pyenv shim on PATH cannot run in the jail.
PYTHON = "/usr/bin/python3"


def bot_yaml(name: str, run: str, build: str | None = None) -> bytes:
    text = f"name: {name}\nrun: {json.dumps(run)}\n"
    return (text + (f"build: {json.dumps(build)}\n" if build is not None else "")).encode()


def fair_bot(name: str, *extra: Entry) -> bytes:
    """A bot that plays random legal moves, with `extra` files."""
    return tar(
        [
            Entry("bot.yaml", bot_yaml(name, f"{PYTHON} random_player.py")),
            Entry("random_player.py", RANDOM_PLAYER.read_bytes()),
            *extra,
        ]
    )


def attacker(name: str, play: str | None, build: str | None, targets: dict[str, Any]) -> bytes:
    """A bot that attacks at play time (`play`, an attack of attack.py) and at build time
    (`build`), aiming at `targets`; without `play` it plays fair."""
    run = f"{PYTHON} attack.py play {play}" if play else f"{PYTHON} random_player.py"
    command = f"{PYTHON} attack.py build {build}" if build else None
    return tar(
        [
            Entry("bot.yaml", bot_yaml(name, run, command)),
            Entry("attack.py", ATTACK.read_bytes()),
            Entry("random_player.py", RANDOM_PLAYER.read_bytes()),
            Entry("targets.json", json.dumps(targets).encode()),
        ]
    )


def submit(arena: Arena, author: str, bot: str, archive: bytes) -> int:
    """A queued version of `author`'s `bot` (made if new), its archive kept as the API keeps
    it; the version's id."""
    with arena.database.session() as session:
        found = session.scalar(select(Bot).where(Bot.name == bot))
        if found is None:
            owner = session.scalar(select(Author.id).where(Author.name == author))
            found = Bot(author_id=owner, name=bot)
            session.add(found)
            session.flush()
        version = Version(bot_id=found.id, number=len(found.versions) + 1, archive_sha256="0" * 64)
        session.add(version)
        session.flush()
        version_id = version.id
    arena.archive(version_id).write_bytes(archive)
    return version_id
