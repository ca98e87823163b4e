"""The finished matches by state and time together: a page of the newest is read from the
index in its order, where the state's index alone had every finished match sorted anew."""

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("matches", schema=None) as batch_op:
        batch_op.create_index("ix_matches_state_finished_at", ["state", "finished_at"])


def downgrade() -> None:
    with op.batch_alter_table("matches", schema=None) as batch_op:
        batch_op.drop_index("ix_matches_state_finished_at")
