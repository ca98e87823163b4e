"""The finished matches' index with their id, so that a page ends at a match, not a moment:
PostgreSQL then reads a page of the newest (or a page from a cursor deep in a season) in the
index's order without sorting its moment's matches anew. The index of the moment alone goes:
a match has its moment only once it is done, which the index above holds, and SQLite would
walk it to find a bot's matches rather than read that bot's seats."""

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("matches", schema=None) as batch_op:
        batch_op.create_index("ix_matches_state_finished_at_id", ["state", "finished_at", "id"])
        batch_op.drop_index("ix_matches_state_finished_at")
        batch_op.drop_index("ix_matches_finished_at")


def downgrade() -> None:
    with op.batch_alter_table("matches", schema=None) as batch_op:
        batch_op.create_index("ix_matches_finished_at", ["finished_at"])
        batch_op.create_index("ix_matches_state_finished_at", ["state", "finished_at"])
        batch_op.drop_index("ix_matches_state_finished_at_id")
