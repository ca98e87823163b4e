"""The ratings' history: a point per version each time the ladder's fit moved it."""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "rating_points",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("version_id", sa.Integer(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("rating", sa.Float(), nullable=False),
        sa.Column("margin", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(["version_id"], ["versions.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("rating_points", schema=None) as batch_op:
        batch_op.create_index("ix_rating_points_version_id_at", ["version_id", "at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("rating_points", schema=None) as batch_op:
        batch_op.drop_index("ix_rating_points_version_id_at")
    op.drop_table("rating_points")
