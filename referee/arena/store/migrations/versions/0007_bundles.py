"""Each version's built directory packed as a bundle named by its SHA-256, the hash kept in
its row: workers that do not share the arena's disk are sent the bundle, and check it."""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("versions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("bundle_sha256", sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("versions", schema=None) as batch_op:
        batch_op.drop_column("bundle_sha256")
