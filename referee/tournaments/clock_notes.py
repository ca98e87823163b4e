"""What the standings say of the clocks: each player's own where the players' differ (time
odds), and the time margin where there is one; read from the transcripts, as the standings
are, one at a time.

It keeps one entry per player and set of clocks it played by, and one per margin: it grows
with the players, never with the matches.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from referee.players.chance import CHANCE_NAME
from referee.records.transcript import Transcript

# A seat's clocks as the line shows them: start, play and bank, in ms.
_Clocks = tuple[int, int, int]


@dataclass
class ClockNotes:
    """The clocks of the matches seen so far (`add`), as the standings' line says them."""

    # Player -> the clocks it played by, in the order first met.
    by_player: dict[str, dict[_Clocks, None]] = field(default_factory=dict)
    margins: set[int] = field(default_factory=set)
    # Whether some seat played by clocks of its own, not its match's.
    odds: bool = False

    def add(self, transcript: Transcript) -> None:
        """Count the clocks of one match."""
        for seat in transcript.seats:
            if seat.player == CHANCE_NAME:
                continue
            own = transcript.clocks_of(seat)
            clocks = (own["start_ms"], own["play_ms"], own["time_bank_ms"])
            self.by_player.setdefault(seat.player, {})[clocks] = None
            self.odds |= seat.clocks is not None
        self.margins.add(transcript.time_margin_ms)

    def text(self) -> str | None:
        """The line under the standings: `clocks (start/play/bank, ms): a 5000/200/0, b
        5000/1000/500; time margin 100 ms`; None when the players had the same clocks and
        every answer was judged exactly."""
        parts = []
        if self.odds:
            players = ", ".join(
                f"{player} {' or '.join('/'.join(map(str, c)) for c in clocks)}"
                for player, clocks in sorted(self.by_player.items())
            )
            parts.append(f"clocks (start/play/bank, ms): {players}")
        margins = sorted(self.margins)
        if any(margins):
            many = len(margins) > 1
            said = ", ".join(map(str, margins))
            parts.append(f"time margin{'s by game' if many else ''} {said} ms")
        if not parts:
            return None
        text = "; ".join(parts)
        return text[0].upper() + text[1:]

    def to_json(self) -> dict[str, Any]:
        """The clocks each player played by where the players' differ (null otherwise), and
        the margins (ms) their answers were judged with."""
        clocks = None
        if self.odds:
            clocks = {
                player: [
                    {"start_ms": start, "play_ms": play, "time_bank_ms": bank}
                    for start, play, bank in found
                ]
                for player, found in sorted(self.by_player.items())
            }
        return {"clocks": clocks, "time_margins_ms": sorted(self.margins)}
