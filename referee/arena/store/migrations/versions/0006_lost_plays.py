"""Each match's plays lost to the arena's own failures (a worker or the venue lost, the
arena stopped): counted, with why the last one was lost, so that the record says which
matches were played again and why, and none of those plays is rated."""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("matches", schema=None) as batch_op:
        batch_op.add_column(sa.Column("lost", sa.Integer(), nullable=False, server_default="0"))
        batch_op.add_column(sa.Column("lost_why", sa.Text(), nullable=False, server_default=""))


def downgrade() -> None:
    with op.batch_alter_table("matches", schema=None) as batch_op:
        batch_op.drop_column("lost_why")
        batch_op.drop_column("lost")
