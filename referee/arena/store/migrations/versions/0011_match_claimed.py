"""A match's claim apart from its start: the ladder marks a match running when a place of its
venue claims it (`claimed_at`), and started only when its play begins (`started_at`), so
that whoever reads the database tells the matches being played from those waiting their
turn in a place's batch. A match of an earlier revision was marked started when claimed:
that moment is its claim's."""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("matches", schema=None) as batch_op:
        batch_op.add_column(sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=True))
    op.execute("UPDATE matches SET claimed_at = started_at")


def downgrade() -> None:
    op.execute(
        "UPDATE matches SET started_at = claimed_at"
        " WHERE started_at IS NULL AND claimed_at IS NOT NULL"
    )
    with op.batch_alter_table("matches", schema=None) as batch_op:
        batch_op.drop_column("claimed_at")
