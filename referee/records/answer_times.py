"""A replayed match's answers judged by its clocks: every recorded answer time a real one,
every fault's kind agreeing with its time and the time its role had, the time banks charged
as the match charged them. Each seat is judged by its own clocks and the match's margin;
whether an answer was late is the clock's to say (`clock.is_late`), as in the match."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence, Set

from referee.clock import Clocks, is_late, limit_text
from referee.errors import FaultKind
from referee.records.replayed import step_mismatch
from referee.records.transcript import Fault, Step


class AnswerTimes:
    """The clocks of a replayed match, seat by seat, and its seats' time banks as the steps
    draw on them."""

    def __init__(
        self, clocks: Sequence[Clocks], roles: Sequence[str], untimed: Set[str], longest_ms: float
    ) -> None:
        # Each role's clocks, in role order.
        self.clocks = dict(zip(roles, clocks, strict=True))
        self.roles = roles
        # People are not timed: their times are recorded, but no clock judges them.
        self.untimed = untimed
        # No answer can have taken longer than the whole match.
        self.longest_ms = longest_ms
        self.banks = {role: self.clocks[role].bank() for role in roles}

    def allowance_ms(self, role: str) -> int:
        """The time a role has for its next move: the play clock and what its bank holds."""
        return self.banks[role].allowance_ms(self.clocks[role].play_ms)

    def check_start(
        self, faults: dict[str, Fault], start_times_ms: Mapping[str, float], cut_short: bool
    ) -> None:
        """Every role answered `ready` within its start clock (and the margin), or has a fault
        for the start; or, in a match `cut_short` (aborted before its first step: a stop as
        it started), was still being waited for."""
        for name in self.roles:
            fault, time_ms = faults.get(name), start_times_ms.get(name)
            if fault is None and time_ms is None:
                if cut_short:
                    continue
                raise step_mismatch(0, "neither a start time nor a start fault is recorded", name)
            start_ms = self.clocks[name].start_ms
            if fault is not None:
                if fault.replacement is not None:
                    raise step_mismatch(0, "a start fault has no replacement move", name)
                if fault.kind in (FaultKind.ILLEGAL, FaultKind.RESIGNED):
                    # A person is ready at once: the prompt, and its quit, come with a move.
                    raise step_mismatch(
                        0, f"{fault.kind} at the start, where no move is asked", name
                    )
                if time_ms is not None:
                    raise step_mismatch(
                        0, "a start time and a start fault: one answer, two fates", name
                    )
                self.check_fault(fault, start_ms)
            elif time_ms is not None:
                self.check_time(0, name, time_ms)
                if name not in self.untimed and self._late(name, time_ms, start_ms):
                    raise step_mismatch(0, self._late_text(name, time_ms, start_ms), name)

    def check_time(self, step: int, role: str, time_ms: float) -> None:
        """A recorded answer time is a real one: finite, not negative, within the match."""
        if not 0 <= time_ms <= self.longest_ms:
            raise step_mismatch(
                step,
                f"an answer time of {time_ms} ms (the match lasted {self.longest_ms:.0f} ms)",
                role,
            )

    def check_fault(self, fault: Fault, allowance_ms: int) -> None:
        """A fault's kind agrees with its recorded answer time and the time the role had.

        A timeout came late (beyond the margin) or not at all; an illegal move was an answer
        in time; a protocol fault may have been an answer in time; a crash, a resource fault
        or a resignation answered nothing.
        """
        time_ms, kind, step, role = fault.time_ms, fault.kind, fault.step, fault.role
        if time_ms is None:
            if kind is FaultKind.ILLEGAL:
                raise step_mismatch(step, "an illegal move, but no answer time is recorded", role)
            return
        self.check_time(step, role, time_ms)
        late = self._late(role, time_ms, allowance_ms)
        if kind is FaultKind.TIMEOUT:
            if not late:
                raise step_mismatch(
                    step,
                    f"a timeout, but its answer came after {time_ms} ms,"
                    f" within the {self._had(role, allowance_ms)} it had",
                    role,
                )
        elif kind in (FaultKind.CRASH, FaultKind.RESOURCE, FaultKind.RESIGNED):
            raise step_mismatch(step, f"a {kind} fault, yet an answer time is recorded", role)
        elif late:
            raise step_mismatch(
                step, f"{self._late_text(role, time_ms, allowance_ms)}: a timeout, not {kind}", role
            )

    def check_times(
        self, number: int, asked: Iterable[str], step: Step, faults: dict[str, Fault]
    ) -> dict[str, int]:
        """Each asked role has its answer time or a fault, and the clocks agree with both.
        Returns the time each asked role had (its `go` line's), before its answer is charged."""
        allowances: dict[str, int] = {}
        for name in asked:
            time_ms, fault = step.times_ms.get(name), faults.get(name)
            if time_ms is None and fault is None:
                raise step_mismatch(number, "asked for a move, but no answer time or fault", name)
            if time_ms is not None and fault is not None:
                raise step_mismatch(
                    number, "an answer time for its move and a fault: one answer, two fates", name
                )
            bank = self.banks[name]
            play_ms = self.clocks[name].play_ms
            allowance_ms = allowances[name] = bank.allowance_ms(play_ms)
            if fault is not None:
                self.check_fault(fault, allowance_ms)
                time_ms = fault.time_ms if fault.kind is not FaultKind.TIMEOUT else None
            if time_ms is None:
                continue
            self.check_time(number, name, time_ms)
            if name not in self.untimed and bank.charge(play_ms, time_ms) is not None:
                raise step_mismatch(
                    number,
                    f"{self._late_text(name, time_ms, allowance_ms)}, yet no timeout is recorded",
                    name,
                )
        return allowances

    def _late(self, role: str, time_ms: float, limit_ms: int) -> bool:
        return is_late(time_ms, limit_ms, self.clocks[role].margin_ms)

    def _had(self, role: str, limit_ms: int) -> str:
        return limit_text(limit_ms, self.clocks[role].margin_ms)

    def _late_text(self, role: str, time_ms: float, limit_ms: int) -> str:
        return f"answered after {time_ms} ms, over the {self._had(role, limit_ms)} it had"
