"""What versions made of their finished matches, as the leaderboard shows it: wins, draws and
losses, the score, and the last match. A seat won if its points beat the best of the other
bots' seats in the match, drew if they equal it, and lost if they fall short (for two seats,
as `views._head_to_head` counts); a match that ended without a result is in none of the
three, and a seat with no other bot's seat beside it neither.

Each match is counted once, as it is recorded (`tally`, in the transaction that marks it
done), into its versions' rows: the leaderboard reads them as they are, in one query, at the
same cost on the last day of a season as on the first.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from referee.arena.store.db import Match


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
