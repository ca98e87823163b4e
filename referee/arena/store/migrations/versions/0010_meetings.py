"""What each bot made of its matches against each other bot, kept as matches are recorded
(`tallies.Meetings`): a bot's page reads its head to head as it is, where it was counted anew
at each view from the bot's seats and the other seat of each of its matches, a cost that grew
with the bot's history. An arena upgraded in place has its finished matches counted."""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "meetings",
        sa.Column("bot_id", sa.Integer(), nullable=False),
        sa.Column("opponent_id", sa.Integer(), nullable=False),
        sa.Column("matches", sa.Integer(), nullable=False),
        sa.Column("wins", sa.Integer(), nullable=False),
        sa.Column("draws", sa.Integer(), nullable=False),
        sa.Column("losses", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["bot_id"], ["bots.id"]),
        sa.ForeignKeyConstraint(["opponent_id"], ["bots.id"]),
        sa.PrimaryKeyConstraint("bot_id", "opponent_id"),
        sqlite_with_rowid=False,
    )
    # Each bot's best seat of a match against each other bot's, as `tallies` counts them.
    op.execute(
        "INSERT INTO meetings (bot_id, opponent_id, matches, wins, draws, losses)"
        " SELECT mine.bot_id, theirs.bot_id, count(*),"
        " sum(CASE WHEN mine.points > theirs.points THEN 1 ELSE 0 END),"
        " sum(CASE WHEN mine.points = theirs.points THEN 1 ELSE 0 END),"
        " sum(CASE WHEN mine.points < theirs.points THEN 1 ELSE 0 END)"
        " FROM (SELECT match_id, bot_id, max(points) AS points FROM seats"
        " WHERE finished_at IS NOT NULL GROUP BY match_id, bot_id) AS mine"
        " JOIN (SELECT match_id, bot_id, max(points) AS points FROM seats"
        " WHERE finished_at IS NOT NULL GROUP BY match_id, bot_id) AS theirs"
        " ON theirs.match_id = mine.match_id AND theirs.bot_id != mine.bot_id"
        " GROUP BY mine.bot_id, theirs.bot_id"
    )


def downgrade() -> None:
    op.drop_table("meetings")
