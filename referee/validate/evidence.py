"""What a validation's matches showed: each offence, where it was, and what it looked like."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from referee.errors import FaultKind
from referee.players.http import Exchange
from referee.players.startup import StartDiagnosis


class Process(StrEnum):
    """Which of the program's processes an offence was in."""

    REUSED = "reused"  # the one that plays several matches in a row
    FRESH = "fresh"  # the one started for a single match


@dataclass(frozen=True)
class Offence:
    """One thing the program did wrong, as a check shows it, and where it did it.

    `step` is the match step (0: its start), or None for what is not at a step (at quit, or
    lines read between requests). `first_move` says the step was the role's first `go` of
    its match in the game and role `where` names (set for faults at a step). `stderr`, for a
    crash, is filled in with what the program last wrote to standard error once its process
    has ended: its last words may come after the fault.
    """

    text: str
    process: Process
    match: int
    step: int | None = None
    first_move: bool = False
    stderr: list[str] = field(default_factory=list, compare=False)
    where: str = ""

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class Late:
    """A move the program was asked for and did not answer in time: where (`where`, its
    process and match), at which step, whether that was its first move of the match, and its
    own time for it in ms when its answer came late (counted from when it had answered the
    request before, if that was later than this one's: it was still busy), None when none
    came."""

    where: str
    process: Process
    match: int
    step: int
    first_move: bool
    own_ms: float | None


@dataclass(frozen=True)
class Reply:
    """Lines nobody asked for that followed one kind of referee line, in one match."""

    after: str  # the first word of the referee line they followed: moves, end, quit...
    count: int
    last: str
    is_move: bool  # whether the last one is a move of the game (an answer come late)


# The check each kind of fault during a match fails.
FAULT_CHECKS = {
    FaultKind.ILLEGAL: "legal moves",
    FaultKind.TIMEOUT: "play clock",
    FaultKind.PROTOCOL: "clean output",
    FaultKind.CRASH: "stays up",
    FaultKind.RESOURCE: "limits",
}


@dataclass(frozen=True)
class StartDeath:
    """A program that died at its start: what it last wrote on each stream, and what that
    says, when it says something known."""

    diagnosis: StartDiagnosis | None
    stdout: tuple[str, ...]
    stderr: tuple[str, ...]


@dataclass
class Evidence:
    """All offences of a validation, by what they are, and the facts the checks need."""

    faults: dict[FaultKind, list[Offence]] = field(default_factory=dict)
    start: list[Offence] = field(default_factory=list)
    silent_starts: int = 0  # starts answered with nothing at all
    starts: int = 0
    ready: int = 0  # starts answered ready
    asked: int = 0  # moves it was asked for
    second_matches: int = 0  # matches a process was asked to play after its first
    fresh_matches: int = 0  # matches played in a fresh process
    # Processes still running at their end, told to quit: those still busy with a late
    # answer that did not exit are not counted (`busy_quits`).
    told_to_quit: int = 0
    exited_on_quit: int = 0  # ... that exited, after which what they left behind is counted
    start_deaths: int = 0  # starts at which the program died
    died: StartDeath | None = None  # the first of them
    late_ready_s: float | None = None  # when a silent start's ready came after all
    after_end: list[Offence] = field(default_factory=list)
    stray: list[Offence] = field(default_factory=list)
    replies: list[Reply] = field(default_factory=list)
    times_ms: list[float] = field(default_factory=list)  # of the moves answered in time
    late: list[Late] = field(default_factory=list)  # ... and of those that were not
    # What followed from late answers, not from a fault of its own: a reused process that
    # still owed some a play clock after its match ended, replaced by a fresh one for the
    # next (as in a tournament), and a quit not obeyed while still busy with a request.
    replaced: list[Offence] = field(default_factory=list)
    busy_quits: list[Offence] = field(default_factory=list)
    reuse: list[Offence] = field(default_factory=list)
    fresh: list[Offence] = field(default_factory=list)
    quit: list[Offence] = field(default_factory=list)
    left_behind: list[Offence] = field(default_factory=list)
    stderr: list[tuple[str, int]] = field(default_factory=list)
    # The matches the rules ended (a state they could not compute): where, and why.
    rules_ended: list[str] = field(default_factory=list)
    # The checks each match failed, in order: an early stop looks at them.
    failed_by_match: list[set[str]] = field(default_factory=list)
    matches: int = 0
    overrun: str = ""
    stopped: str = ""  # why the rest was skipped, when it was
    # Every request sent to a GGP player at a URL, and what came of it.
    exchanges: list[Exchange] = field(default_factory=list)

    def conclusive(self) -> str:
        """Why the matches so far already decide the verdict, or "" while they do not."""
        if self.starts == 1 and self.start_deaths == 1:
            return "it died at its first start"
        if self.starts == 1 and self.silent_starts == 1:
            return "it did not answer its first start within the start clock"
        if len(self.failed_by_match) < 2:
            return ""
        every = set.intersection(*self.failed_by_match)
        if not every:
            return ""
        checks = ", ".join(sorted(every))
        return f"it failed {checks} in each of its first {len(self.failed_by_match)} matches"

    def unchecked(self) -> dict[str, str]:
        """The checks that a fault or a line can fail, but that nothing put to the test (a
        match stopped early, or a program that never got so far): why, by check."""
        never_ready = "it never got ready"
        occasions = {
            "start": (self.starts, "no match started"),
            "legal moves": (len(self.times_ms), "no move of its own was played"),
            "play clock": (self.asked, "it was never asked for a move"),
            "clean output": (self.ready, never_ready),
            "stays up": (self.ready, never_ready),
            "limits": (self.ready, never_ready),
            "reuse": (
                self.second_matches,
                "each process asked for a second match still owed late answers a play clock"
                " after its first, and was replaced by a fresh one"
                if self.replaced
                else "no process was asked for a second match",
            ),
            "fresh start": (self.fresh_matches, "no match in a fresh process"),
            "quit": (
                self.told_to_quit,
                "each process told to quit was still busy with a late answer"
                if self.busy_quits
                else "no process was still running to be told to quit",
            ),
            "no leftovers": (self.exited_on_quit, "no process exited on quit"),
        }
        return {name: why for name, (count, why) in occasions.items() if not count}

    def by_check(self) -> dict[str, list[Offence]]:
        """The offences of each check that a fault or a line can fail."""
        faults = {name: self.faults.get(kind, []) for kind, name in FAULT_CHECKS.items()}
        return {
            "start": self.start,
            "legal moves": faults["legal moves"],
            "play clock": faults["play clock"],
            "clean output": faults["clean output"] + self.stray,
            "stays up": self.after_end + faults["stays up"],
            "limits": faults["limits"],
            "reuse": self.reuse,
            "fresh start": self.fresh,
            "quit": self.quit,
            "no leftovers": self.left_behind,
        }
