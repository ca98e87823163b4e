"""Alembic's environment for the arena's database: the URL comes from the caller's config."""

from alembic import context
from sqlalchemy import create_engine

from referee.arena.store.db import Base

url = context.config.get_main_option("sqlalchemy.url")
assert url is not None
connectable = create_engine(url)
with connectable.connect() as connection:
    # SQLite alters tables by copying them ("batch"): the same migrations serve both.
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()
connectable.dispose()
