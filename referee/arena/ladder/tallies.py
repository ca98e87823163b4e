"""What versions made of their finished matches, as the leaderboard shows it: wins, draws and
losses, the score, and the last match; and what each bot made of its matches against each
other bot, as its page's head to head shows it (`Meetings`). A seat won if its points beat
the best of the other bots' seats in the match, drew if they equal it, and lost if they fall
short; a match that ended without a result is in none of the three, and a seat with no other
bot's seat beside it neither.

Each match is counted once, as it is recorded (in the transaction that marks it done), into
its versions' rows and its bots' meetings: the leaderboard and a bot's page read them as they
are, at the same cost on the last day of a season as on the first.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass, field

from sqlalchemy import Insert
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from referee.arena.store.db import Match, Meeting


@dataclass(frozen=True)
class Results:
    """A version's results: its decided matches, and its last finished match, if any."""

    wins: int = 0
    draws: int = 0
    losses: int = 0
    last_key: str | None = None
    last_at: dt.datetime | None = None

    @property
    def score(self) -> float | None:
        """The share of the points won, a win counting 1 and a draw a half, as in chess:
        0.5 is even. None before any decided match."""
        decided = self.wins + self.draws + self.losses
        return None if decided == 0 else (self.wins + self.draws / 2) / decided


def tally(match: Match) -> None:
    """Count finished `match` (its seats' points and versions loaded) into its versions'
    results, and make it their last match where it finished after the one they have."""
    assert match.finished_at is not None
    for seat in match.seats:
        version = seat.version
        others = [
            other.points
            for other in match.seats
            if other.version.bot_id != version.bot_id and other.points is not None
        ]
        if seat.points is not None and others:
            best = max(others)
            version.wins += seat.points > best
            version.draws += seat.points == best
            version.losses += seat.points < best
        newest = (version.last_match_at, version.last_match_id or 0)
        if version.last_match_at is None or (match.finished_at, match.id) > newest:
            version.last_match_id, version.last_match_at = match.id, match.finished_at


# A meeting's counts, in the order of its columns after the two bots.
MEETING_COUNTS = ("matches", "wins", "draws", "losses")


@dataclass
class Meetings:
    """The meetings of a batch of finished matches, counted as each is recorded (`add`) and
    added to the table at once (`save`): for each bot, against each other bot of a match,
    the match and its result as the bot's best seat made it against that bot's best."""

    counts: Counter[tuple[int, int, str]] = field(default_factory=Counter)

    def add(self, match: Match) -> None:
        """Count finished `match` (its seats' points and versions loaded)."""
        best: dict[int, float | None] = {}
        for seat in match.seats:
            bot = seat.version.bot_id
            if bot not in best or _above(seat.points, best[bot]):
                best[bot] = seat.points
        for bot, mine in best.items():
            for opponent, theirs in best.items():
                if opponent == bot:
                    continue
                self.counts[bot, opponent, "matches"] += 1
                if mine is not None and theirs is not None:
                    outcome = "wins" if mine > theirs else "draws" if mine == theirs else "losses"
                    self.counts[bot, opponent, outcome] += 1

    def save(self, session: Session) -> None:
        """Add the counts to the meetings' rows in `session`, making those not there: in one
        statement each, which adds to what the row holds when it is written, so that two
        transactions recording matches of the same two bots each add theirs. In the order of
        the bots' ids, which every recorder keeps, so that no two each wait for a row the
        other holds."""
        pairs = sorted({(bot, opponent) for bot, opponent, _ in self.counts})
        rows = [
            {
                "bot_id": bot,
                "opponent_id": opponent,
                **{name: self.counts[bot, opponent, name] for name in MEETING_COUNTS},
            }
            for bot, opponent in pairs
        ]
        if rows:
            session.execute(_adding(session), rows)
        self.counts.clear()


def _above(points: float | None, best: float | None) -> bool:
    return points is not None and (best is None or points > best)


def _adding(session: Session) -> Insert:
    """An insert of a meeting that adds its counts to the row of its two bots if there is
    one: ON CONFLICT, in SQLite's and PostgreSQL's words alike."""
    dialect = session.get_bind().dialect.name
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    statement = insert(Meeting)
    table = Meeting.__table__.c
    return statement.on_conflict_do_update(
        index_elements=[table.bot_id, table.opponent_id],
        set_={name: table[name] + statement.excluded[name] for name in MEETING_COUNTS},
    )
