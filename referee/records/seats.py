"""What a seat was told: a replayed match as one role saw it, step by step.

The one home of a seat's view: `referee replay --seat`, the report's match pages and an
arena's match watched as it is played all take it from here. A seat is told its role and
the clocks (`start`); at each step it has a choice (or, a GGP player, at every step) it is
asked for a move (`go`, with its legal moves and the time it has) and answers; after each
step it is told every role's move (`moves`) or, in a game of imperfect information, only
its own move and its percepts (`sees`); at the end, every role's goal (`end`). The lines
are the protocol's (`docs/protocol.md`); a GGP player was told the same in the GGP's own
messages (`docs/ggp.md`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from referee.errors import RefereeError
from referee.games import Game
from referee.games.base import CHANCE_ROLE
from referee.protocol import End, EndReason, Go, Moves, Sees, Start
from referee.records.replayed import Frame
from referee.records.transcript import ADJUDICATED, Fault, Transcript


def told(
    moves: Mapping[str, str], percepts: Mapping[str, Sequence[str]], seats: Iterable[str]
) -> dict[str, dict[str, Any]]:
    """What each of `seats` was told of a step of a game of imperfect information, as the
    report's viewer takes it: its own move of `moves`, and its `percepts`."""
    return {role: {"move": moves[role], "percepts": list(percepts.get(role, ()))} for role in seats}


@dataclass(frozen=True)
class SeatStep:
    """One step as a seat lived it: whether it was asked (`go`) and how it answered, then
    what it was told of the joint move, if one was played."""

    step: int
    # The time its `go` gave it and the legal moves it listed; None: not asked (its move was
    # forced, it was out of the match, the step was the opening's, or nobody knows: a match
    # another manager played).
    asked_ms: int | None
    legal: tuple[str, ...]
    # Its answer's time (None: no answer was taken, see `fault`), and its fault at this step.
    time_ms: float | None
    fault: Fault | None
    # Its own move as played (forced, its answer, or a fault's replacement); None at a step
    # a forfeit ended before any move was played.
    move: str | None
    # What it was told after the step: in a game of perfect information every role's move
    # (`moves`); in one of imperfect information only its own move and its percepts
    # (`percepts`), or None if the match was aborted before it was told.
    moves: dict[str, str] | None
    percepts: tuple[str, ...] | None

    def lines(self) -> list[str]:
        """The step in the protocol's lines: `> ` each line the seat was sent, `< ` its
        answer (or `! ` its fault, and the move played instead)."""
        lines = []
        if self.asked_ms is not None:
            lines.append(f"> {Go(self.step, self.asked_ms, self.legal)}")
            if self.fault is None:
                shown = f"  ({self.time_ms:.1f} ms)" if self.time_ms is not None else ""
                lines.append(f"< {self.move}{shown}")
        if self.fault is not None:
            instead = f"; {self.fault.replacement} played instead" if self.fault.replacement else ""
            lines.append(f"! {self.fault.kind}: {self.fault.detail}{instead}")
        if self.moves is not None:
            lines.append(f"> {Moves(self.step, tuple(self.moves.values()))}")
        elif self.move is not None and self.percepts is not None:
            lines.append(f"> {Sees(self.step, self.move, self.percepts)}")
        return lines

    @property
    def told(self) -> dict[str, Any] | None:
        """What the report's viewer shows of the step (`told`): its own move and its
        percepts; None for a step not played."""
        if self.move is None:
            return None
        return {"move": self.move, "percepts": list(self.percepts or ())}

    def to_json(self) -> dict[str, Any]:
        asked = None if self.asked_ms is None else {"ms": self.asked_ms, "legal": list(self.legal)}
        return {
            "step": self.step,
            "asked": asked,
            "time_ms": self.time_ms,
            "fault": None if self.fault is None else asdict(self.fault),
            "move": self.move,
            "moves": self.moves,
            "percepts": None if self.percepts is None else list(self.percepts),
        }


@dataclass(frozen=True)
class SeatView:
    """A match as one role saw it: its start, each step, and the end it was told."""

    role: str
    player: str
    imperfect: bool
    # A match another manager played: who was asked, and when, is not recorded.
    imported: bool
    # A GGP player, seated over HTTP: told the same in the GGP's messages.
    ggp: bool
    # Its `start` line, a GDL game's rules in it shown as `RULES`, and its `ready`'s time.
    start: Start
    ready_ms: float | None
    start_fault: Fault | None
    steps: list[SeatStep]
    # The `end` line: every role's goal, in role order, and why; None if it was never sent
    # (a match another manager had not finished, or a replay stopped by a discrepancy).
    end: End | None

    @property
    def summary(self) -> str:
        """What the seat was told, in a sentence."""
        if self.imperfect:
            after = "only its own move and its percepts (sees), never another role's move"
        else:
            after = "every role's move (moves): a game of perfect information"
        said = f"what {self.role} ({self.player}) was told (>) and answered (<): after each"
        said += f" step {after}"
        if self.ggp:
            said += "; a GGP player, it was told the same in the GGP's START, PLAY and STOP"
        if self.imported:
            said += (
                "; another manager played this match, so it is said here in this referee's"
                " protocol, and who was asked for a move, and when, is not recorded"
            )
        return said

    def lines(self) -> list[str]:
        """The match in the protocol's lines to and from this seat (`SeatStep.lines`)."""
        lines = [f"> {self.start}"]
        if self.ready_ms is not None:
            lines.append(f"< ready  ({self.ready_ms:.1f} ms)")
        if self.start_fault is not None:
            lines.append(f"! {self.start_fault.kind}: {self.start_fault.detail}")
        for step in self.steps:
            lines += step.lines()
        if self.end is not None:
            lines.append(f"> {self.end}")
        return lines

    def to_json(self) -> dict[str, Any]:
        end = None
        if self.end is not None:
            end = {"goals": list(self.end.goals), "reason": str(self.end.reason)}
        return {
            "role": self.role,
            "player": self.player,
            "imperfect": self.imperfect,
            "imported": self.imported,
            "ggp": self.ggp,
            "start": {
                "start_ms": self.start.start_ms,
                "play_ms": self.start.play_ms,
                "ready_ms": self.ready_ms,
                "fault": None if self.start_fault is None else asdict(self.start_fault),
            },
            "steps": [step.to_json() for step in self.steps],
            "end": end,
        }


# What a GDL game's `start` line is shown with in place of its rulesheet, which is long.
RULES = "<rulesheet>"


def seat_roles(roles: Sequence[str]) -> list[str]:
    """The roles of `roles` a seat's view can be asked of: all but chance, told nothing."""
    return [role for role in roles if role != CHANCE_ROLE]


def seat_named(game_id: str, roles: Sequence[str], name: str) -> str:
    """The seat of a game (`roles`: its roles) that `name` names, in any case, as GDL's names
    are; RefereeError, naming the seats, for a name that is none."""
    seats = seat_roles(roles)
    found = [role for role in roles if role.lower() == name.lower()]
    if found and found[0] in seats:
        return found[0]
    why = "chance, played by the referee, is told nothing" if found else None
    why = why or f"{game_id} has no role {name!r}"
    raise RefereeError(f"--seat {name}: {why}; its seats are {', '.join(seats)}")


def seat_view(
    transcript: Transcript, game: Game, frames: Sequence[Frame], role: str, complete: bool = True
) -> SeatView:
    """What `role` was told of the match, from its replay's `frames` (as far as they go;
    `complete`: the replay found no discrepancy, so the end recorded is the end told).
    RefereeError, naming the seats, for a role that is no seat of the game."""
    role = seat_named(transcript.game, game.roles, role)
    imported = transcript.origin is not None
    start_faults = [f for f in transcript.faults if f.step == 0 and f.role == role]
    steps: list[SeatStep] = []
    for frame in frames[1:]:
        fault = next((f for f in frame.faults if f.role == role), None)
        asked = frame.asked.get(role)
        legal: tuple[str, ...] = ()
        if asked is not None:
            before = frames[frame.step - 1].state if frame.played else frame.state
            legal = tuple(game.legal_moves(before, game.role_index(role)))
        moves: dict[str, str] | None = None
        percepts: tuple[str, ...] | None = None
        move = frame.moves.get(role)
        if frame.played and game.imperfect:
            recorded = transcript.steps[frame.step - 1].percepts
            if recorded is not None:
                seen = told(frame.moves, recorded, [role])[role]
                move, percepts = seen["move"], tuple(seen["percepts"])
        elif frame.played:
            moves = dict(frame.moves)
        steps.append(
            SeatStep(
                frame.step, asked, legal, frame.times_ms.get(role), fault, move, moves, percepts
            )
        )
    seat = next(seat for seat in transcript.seats if seat.role == role)
    # A seat is told its own clocks where a tournament gave it some.
    clocks = transcript.clocks_of(seat)
    rules = None if transcript.rulesheet is None else RULES
    start = Start(
        transcript.match_id, transcript.game, role, clocks["start_ms"], clocks["play_ms"], rules
    )
    return SeatView(
        role,
        seat.player,
        game.imperfect,
        imported,
        seat.ggp,
        start,
        transcript.start_times_ms.get(role),
        start_faults[0] if start_faults else None,
        steps,
        _end(transcript) if complete else None,
    )


def _end(transcript: Transcript) -> End | None:
    """The `end` line every seat was sent: the goals in role order and the end's reason (a
    match adjudicated ends `terminal` for its players; one aborted has goals of 0)."""
    reason = transcript.end_reason
    if reason not in {*EndReason, ADJUDICATED}:
        return None  # unfinished: another manager was still playing it
    said = EndReason.TERMINAL if reason == ADJUDICATED else EndReason(reason)
    goals = transcript.goals or dict.fromkeys((seat.role for seat in transcript.seats), 0)
    return End(tuple(goals.values()), said)
