"""Each version's results kept in its row (wins, draws, losses, its last finished match), as
the ladder records each match, where the leaderboard counted them anew from every match of
the season at each reading. An arena's matches so far are counted here once, by the rule of
`tallies`: a seat's points against the best of the other bots' seats in its match."""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

_COUNTS = ("wins", ">"), ("draws", "="), ("losses", "<")
# The best points of another bot's seat beside seat `mine` of version `versions`.
_BEST = (
    "(SELECT max(theirs.points) FROM seats theirs"
    " JOIN versions their_version ON their_version.id = theirs.version_id"
    " WHERE theirs.match_id = mine.match_id AND theirs.id != mine.id"
    " AND their_version.bot_id != versions.bot_id)"
)
# The version's finished matches, the newest first.
_NEWEST = (
    " FROM seats JOIN matches ON matches.id = seats.match_id"
    " WHERE seats.version_id = versions.id AND matches.state = 'done'"
    " AND matches.finished_at IS NOT NULL"
    " ORDER BY matches.finished_at DESC, matches.id DESC LIMIT 1"
)


def upgrade() -> None:
    with op.batch_alter_table("versions", schema=None) as batch_op:
        for name, _ in _COUNTS:
            batch_op.add_column(sa.Column(name, sa.Integer(), nullable=False, server_default="0"))
        batch_op.add_column(sa.Column("last_match_id", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("last_match_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.create_foreign_key(
            "fk_versions_last_match_id_matches", "matches", ["last_match_id"], ["id"]
        )
    for name, compared in _COUNTS:
        op.execute(
            f"UPDATE versions SET {name} = (SELECT count(*) FROM seats mine"
            " JOIN matches ON matches.id = mine.match_id"
            f" WHERE mine.version_id = versions.id AND matches.state = 'done'"
            f" AND mine.points {compared} {_BEST})"
        )
    op.execute(
        f"UPDATE versions SET last_match_id = (SELECT matches.id{_NEWEST}),"
        f" last_match_at = (SELECT matches.finished_at{_NEWEST})"
    )


def downgrade() -> None:
    with op.batch_alter_table("versions", schema=None) as batch_op:
        batch_op.drop_constraint("fk_versions_last_match_id_matches", type_="foreignkey")
        for name in ("last_match_at", "last_match_id", *(name for name, _ in _COUNTS)):
            batch_op.drop_column(name)
