"""Accounts: names unique without regard to case (a `name_key` beside each author's and bot's
name), a token that may be revoked (no hash), the browsers signed in, and the audit log.

An arena that already holds two names differing only by case is not upgraded: which of the
two authors (or bots) should keep the name is the organiser's to say, so the upgrade stops
with a line naming both, and the arena stays as it was until one is renamed by hand.
"""

import sqlalchemy as sa
from alembic import op

from referee.errors import ArenaError

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

# The tables whose names become unique without regard to case, and each name's length.
_NAMED = (("authors", 64), ("bots", 40))


def upgrade() -> None:
    # All checked before anything changes: SQLite's changes of a table are not undone.
    for table, _ in _NAMED:
        _refuse_look_alikes(op.get_bind(), table)
    for table, length in _NAMED:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(sa.Column("name_key", sa.String(length=length), nullable=True))
        op.execute(sa.text(f"UPDATE {table} SET name_key = lower(name)"))
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.alter_column(
                "name_key", existing_type=sa.String(length=length), nullable=False
            )
            batch_op.create_unique_constraint(f"uq_{table}_name_key", ["name_key"])
    with op.batch_alter_table("authors", schema=None) as batch_op:
        batch_op.alter_column("token_hash", existing_type=sa.String(length=64), nullable=True)

    op.create_table(
        "sign_ins",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("id_hash", sa.String(length=64), nullable=False),
        sa.Column("author_id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["author_id"], ["authors.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("id_hash"),
    )
    with op.batch_alter_table("sign_ins", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_sign_ins_author_id"), ["author_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_sign_ins_expires_at"), ["expires_at"], unique=False)

    op.create_table(
        "audit",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("author", sa.String(length=64), nullable=True),
        sa.Column("action", sa.String(length=32), nullable=False),
        sa.Column("subject", sa.Text(), nullable=False),
        sa.Column("address", sa.String(length=64), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("audit", schema=None) as batch_op:
        batch_op.create_index("ix_audit_action_at", ["action", "at"], unique=False)
        batch_op.create_index("ix_audit_address_at", ["address", "at"], unique=False)


def _refuse_look_alikes(connection: sa.Connection, table: str) -> None:
    """Stop the upgrade, naming them, if two names of `table` differ only by case."""
    rows = connection.execute(sa.text(f"SELECT name FROM {table} ORDER BY id")).scalars().all()
    seen: dict[str, str] = {}
    for name in rows:
        other = seen.setdefault(name.lower(), name)
        if other != name:
            kind = table[:-1]
            raise ArenaError(
                f"cannot upgrade the arena: {kind} names {other!r} and {name!r} differ only by"
                f" case, and names are now unique without regard to case; rename one in the"
                f" {table} table, then start the arena again"
            )


def downgrade() -> None:
    op.drop_table("audit")
    op.drop_table("sign_ins")
    with op.batch_alter_table("authors", schema=None) as batch_op:
        batch_op.alter_column("token_hash", existing_type=sa.String(length=64), nullable=False)
    for table, _ in reversed(_NAMED):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_constraint(f"uq_{table}_name_key", type_="unique")
            batch_op.drop_column("name_key")
