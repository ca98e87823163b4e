"""What a replay finds: the frames of a match, the first place where its transcript and the
rules disagree, and the exception that carries that place out of the checks."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import asdict, dataclass, field
from typing import Any

from referee.errors import GameFault
from referee.games import Game
from referee.records.transcript import Fault, Transcript


@dataclass(frozen=True)
class Discrepancy:
    """Where a transcript and the rules disagree: a step (or a part of the file), a role, what."""

    where: str
    what: str
    step: int | None = None
    role: str | None = None

    def __str__(self) -> str:
        return ": ".join(part for part in (self.where, self.role, self.what) if part)

    def to_json(self) -> dict[str, Any]:
        return {"where": self.where, "step": self.step, "role": self.role, "what": self.what}


@dataclass(frozen=True)
class Frame:
    """The state after a step (step 0: the start), with the moves, response times and faults,
    and the roles the referee asked for a move (sent `go`), each with the time it had.

    The step a forfeit ended the match at completed no joint move: its frame has no moves,
    its state is the one the step was asked in, and its faults are the forfeit's. A match
    another manager played (an imported one) records nobody's asking: its `asked` is empty.
    """

    step: int
    state: Hashable
    moves: dict[str, str] = field(default_factory=dict)
    times_ms: dict[str, float] = field(default_factory=dict)
    faults: list[Fault] = field(default_factory=list)
    asked: dict[str, int] = field(default_factory=dict)

    @property
    def played(self) -> bool:
        """Whether a joint move was completed at this step (the start: nothing to play)."""
        return self.step == 0 or bool(self.moves)

    def to_json(self, game: Game) -> dict[str, Any]:
        """The frame as JSON-ready data, with the board as text."""
        return {
            "step": self.step,
            "played": self.played,
            "moves": self.moves,
            "times_ms": self.times_ms,
            "faults": [asdict(fault) for fault in self.faults],
            "terminal": _terminal(game, self.state),
            "board": game.render(self.state),
        }


def _terminal(game: Game, state: Hashable) -> bool | None:
    """Whether a state is terminal; None for the state the rules failed on."""
    try:
        return game.is_terminal(state)
    except GameFault:
        return None


@dataclass(frozen=True)
class Replay:
    """A transcript replayed: the frames as far as they agree with the rules, and what did not."""

    transcript: Transcript
    game: Game | None
    frames: list[Frame]
    problem: Discrepancy | None
    # Something to know that is not a discrepancy: a rulesheet changed since the match.
    note: str | None = None

    @property
    def verified(self) -> bool:
        return self.problem is None


class Mismatch(Exception):
    """The first discrepancy, carried out of the checks to the replay, which stops there."""

    def __init__(self, discrepancy: Discrepancy) -> None:
        super().__init__(str(discrepancy))
        self.discrepancy = discrepancy


def step_mismatch(step: int, what: str, role: str | None = None) -> Mismatch:
    """A discrepancy at a step of the match."""
    return Mismatch(Discrepancy(f"step {step}", what, step, role))


def mismatch(where: str, what: str, role: str | None = None) -> Mismatch:
    """A discrepancy in a part of the file (`where`: its key) that is no step."""
    return Mismatch(Discrepancy(where, what, None, role))
