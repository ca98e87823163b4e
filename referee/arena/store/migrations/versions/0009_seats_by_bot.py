"""Each seat keeps its version's bot and its match's moment once done, indexed together: a
bot's matches newest first (its page, its list of matches, its head to head) are read from
its own seats in order, where they were found among its versions' seats and sorted anew, a
cost that grew with the bot's history. The seats by match hold each seat's bot and points
too, so that a bot's head to head is read from the two indexes alone."""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("seats", schema=None) as batch_op:
        batch_op.add_column(sa.Column("bot_id", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True))
    op.execute(
        "UPDATE seats SET"
        " bot_id = (SELECT versions.bot_id FROM versions WHERE versions.id = seats.version_id),"
        " finished_at = (SELECT matches.finished_at FROM matches"
        " WHERE matches.id = seats.match_id)"
    )
    with op.batch_alter_table("seats", schema=None) as batch_op:
        batch_op.alter_column("bot_id", existing_type=sa.Integer(), nullable=False)
        batch_op.create_foreign_key("fk_seats_bot_id_bots", "bots", ["bot_id"], ["id"])
        batch_op.create_index(
            "ix_seats_bot_id_finished_at", ["bot_id", "finished_at", "match_id", "points"]
        )
        batch_op.create_index("ix_seats_match_id_bot_id", ["match_id", "bot_id", "points"])
        batch_op.drop_index("ix_seats_match_id")


def downgrade() -> None:
    with op.batch_alter_table("seats", schema=None) as batch_op:
        batch_op.create_index("ix_seats_match_id", ["match_id"])
        batch_op.drop_index("ix_seats_match_id_bot_id")
        batch_op.drop_index("ix_seats_bot_id_finished_at")
        batch_op.drop_constraint("fk_seats_bot_id_bots", type_="foreignkey")
        batch_op.drop_column("finished_at")
        batch_op.drop_column("bot_id")
