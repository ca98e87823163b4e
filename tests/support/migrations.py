"""An arena's database as its migrations meet it, for the tests: Alembic's config for a
database, the revision a database is at, and an engine used for one block."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, create_engine

from referee.arena.store.db import MIGRATIONS


def alembic_config(url: str | None = None) -> Config:
    """The arena's migrations, on the database at `url` if given."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    if url is not None:
        config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


@contextlib.contextmanager
def engine_on(url: str) -> Iterator[Engine]:
    """An engine on the database at `url`, disposed of when the block ends."""
    engine = create_engine(url)
    try:
        yield engine
    finally:
        engine.dispose()


def revision(url: str) -> str | None:
    """The revision the database at `url` is at: None if no migration has run on it."""
    with engine_on(url) as engine, engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def head() -> str:
    """The newest revision of the arena's migrations: where an upgrade takes a database."""
    found = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert found is not None
    return found
