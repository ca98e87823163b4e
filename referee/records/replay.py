"""Replaying a transcript with the rules: every recorded step re-applied and checked.

A transcript verifies when its signature holds, its moves are legal from the initial state,
the moves the referee drew at random are the ones the match seed draws, every answer time
and fault agrees with the clocks, the end is what the rules say, and the goals are the ones
recorded. The first thing that differs is reported as a `Discrepancy`.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Hashable, Iterable, Sequence
from datetime import datetime
from pathlib import Path

from referee import policy
from referee.clock import CLOCK_FIELDS, Clocks
from referee.errors import (
    ConfigError,
    FaultKind,
    GameFault,
    MoveParseError,
    RulesheetError,
    UnknownGameError,
)
from referee.games import Game, Move, StateLimits, get_game, load_text, rulesheet_sha256
from referee.policy import MAX_SEED, Policy
from referee.protocol import EndReason
from referee.records.answer_times import AnswerTimes
from referee.records.replayed import Discrepancy, Frame, Mismatch, Replay, mismatch, step_mismatch
from referee.records.rules_fault import (
    check_rules_fault_header,
    check_state_limits_header,
    recorded_limits,
    rules_fault_note,
)
from referee.records.transcript import (
    ADJUDICATED,
    GGP_ORIGIN,
    UNFINISHED,
    Fault,
    Rulesheet,
    Step,
    Transcript,
    seats_disagree,
)


def _check_replacement(step: int, role: str, fault: Fault, drawn: Move | None) -> None:
    """The replacement a fault records must be the one the match seed draws (None: none)."""
    if fault.replacement != drawn:
        raise step_mismatch(
            step,
            f"the replacement drawn with the match seed is {drawn},"
            f" but the fault records {fault.replacement}",
            role,
        )


def replay(transcript: Transcript) -> Replay:
    """Re-apply a transcript's steps with the rules; stops at the first discrepancy."""
    note = None
    try:
        limits = recorded_limits(transcript)
        if transcript.rulesheet is None:
            game = get_game(transcript.game, limits)
        else:
            game, note = _recorded_rules(transcript.rulesheet, limits)
    except (UnknownGameError, RulesheetError) as error:
        return Replay(transcript, None, [], Discrepancy("game", str(error)))
    frames: list[Frame] = []
    replayer = _Replayer(transcript, game, frames)
    try:
        replayer.run()
    except Mismatch as mismatch:
        return Replay(transcript, game, frames, mismatch.discrepancy, note)
    return Replay(transcript, game, frames, None, replayer.note or note)


def _recorded_rules(sheet: Rulesheet, limits: StateLimits) -> tuple[Game, str | None]:
    """The game of a transcript's own rulesheet, and a note if the file has changed since."""
    if rulesheet_sha256(sheet.text) != sheet.sha256:
        raise RulesheetError(sheet.path, None, "the recorded rules do not match their SHA-256")
    game = load_text(sheet.text, sheet.path, limits)
    try:
        current = Path(sheet.path).read_text(encoding="utf-8", errors="replace")
        now = rulesheet_sha256(current)
    except OSError:
        return game, f"{sheet.path} is gone; replayed under the rules recorded with the match"
    if now != sheet.sha256:
        return game, (
            f"{sheet.path} has changed since the match (SHA-256 {now[:12]}, was "
            f"{sheet.sha256[:12]}); replayed under the rules recorded with the match"
        )
    return game, None


class _Replayer:
    """The checks of one replay, in the order the match made its decisions."""

    # The answers' judge, made by the header's check once the clocks are known.
    times: AnswerTimes

    def __init__(self, transcript: Transcript, game: Game, frames: list[Frame]) -> None:
        self.t = transcript
        self.game = game
        self.roles = game.roles
        self.frames = frames
        # The generator the referee drew its own moves from; policy.resolve says in what order.
        self.rng = random.Random(transcript.seed)
        self.opening = policy.opening_rng(transcript.seed)
        self.faults: dict[int, dict[str, Fault]] = defaultdict(dict)
        self.out: frozenset[int] = frozenset()
        # People are not timed: their times are recorded, but no clock judges them. Only they
        # can resign.
        self.untimed = {seat.role for seat in transcript.seats if seat.human}
        self.policy = Policy(transcript.policy) if transcript.policy in set(Policy) else None
        # GGP players are asked at forced steps too (records made before that, were not).
        self.ggp = {
            game.roles.index(s.role) for s in transcript.seats if s.ggp and s.role in game.roles
        }
        # A match another manager played: its times and its own draws were not recorded, so
        # only the moves, the end and the goals can be checked.
        self.imported = transcript.origin is not None
        self.last_at_ms = 0.0
        # The state being computed (0 the first; n the one after step n), for a fault of
        # the rules; and what to know of one that is not a discrepancy.
        self.at = 0
        self.note: str | None = None

    def run(self) -> None:
        self._check_header()
        self._index_faults()
        start_faults = self.faults.get(0, {})
        if not self.imported:
            cut_short = self.t.end_reason == EndReason.ABORTED and not self.t.steps
            self.times.check_start(start_faults, self.t.start_times_ms, cut_short)
        faulty = [self.roles.index(role) for role in start_faults]
        _, self.out = policy.start_outcome(Policy(self.t.policy), faulty)
        state = self.game.initial_state()
        self.frames.append(Frame(0, state, faults=list(start_faults.values())))
        found: GameFault | None = None
        try:
            for number, step in enumerate(self.t.steps, start=1):
                state = self._step(number, step, state)
            self.at = len(self.t.steps)
            if self.t.rules_fault is None:
                self._check_end(state)
                return
            # What the match asks of its last state: whether it is terminal, then the goals.
            if self.game.is_terminal(state):
                self.game.goals(state)
        except GameFault as fault:
            recorded = self.t.rules_fault
            last = len(self.t.steps)
            if recorded is None and self.at == last and self.t.end_reason == EndReason.ABORTED:
                # Interrupted (Ctrl-C, SIGTERM) while its rules computed the state after its
                # last step, a match is aborted with no fault of theirs: nothing was decided
                # there, and a state that fails here decides nothing either.
                self.note = f"state {last}, where the match was aborted, fails here: {fault}"
                self._check_aborted_by_rules()
                return
            if recorded is None or recorded.step != self.at:
                raise step_mismatch(self.at, f"the rules fail at this state: {fault}") from None
            found = fault
        recorded = self.t.rules_fault
        assert recorded is not None  # without one, the end was checked above
        self.note = rules_fault_note(recorded, found, self.game)
        self._check_aborted_by_rules()

    def _check_aborted_by_rules(self) -> None:
        """A match the rules ended (aborted, no goals: the header's checks) has no later
        fault."""
        late = [step for step in self.faults if step > self.at]
        if late:
            role = next(iter(self.faults[late[0]]))
            raise step_mismatch(late[0], "a fault at a step that was never played", role)

    def _check_header(self) -> None:
        roles = [seat.role for seat in self.t.seats]
        if roles != list(self.roles):
            raise mismatch("seats", f"roles {roles}, but {self.game.id} has {list(self.roles)}")
        if self.t.origin not in (None, GGP_ORIGIN):
            raise mismatch("origin", f"unknown origin {self.t.origin!r}")
        if self.t.policy not in set(Policy):
            raise mismatch("policy", f"unknown policy {self.t.policy!r}")
        if self.t.end_reason not in {*EndReason, UNFINISHED, ADJUDICATED}:
            raise mismatch("end_reason", f"unknown end reason {self.t.end_reason!r}")
        if self.t.end_reason == UNFINISHED and self.t.origin != GGP_ORIGIN:
            raise mismatch(
                "end_reason", "unfinished, but only a match another manager played can be"
            )
        unended = self.t.end_reason in (EndReason.ABORTED, UNFINISHED)
        if unended and self.t.goals is not None:
            raise mismatch("goals", f"recorded, but an {self.t.end_reason} match has none")
        if not unended and self.t.goals is None:
            raise mismatch("goals", f"missing, but the match ended ({self.t.end_reason})")
        if self.t.goals is not None and list(self.t.goals) != list(self.roles):
            raise mismatch("goals", f"roles {list(self.t.goals)}, expected {list(self.roles)}")
        self._known_roles(self.t.start_times_ms, "start_times_ms")
        try:
            Clocks(margin_ms=self.t.time_margin_ms)
        except ConfigError as error:
            raise mismatch("time_margin_ms", str(error)) from None
        clocks = self._clocks("clocks", self.t.clocks)
        # Each seat's own clocks, where it had them; the match's margin for every seat.
        seat_clocks = [
            clocks if seat.clocks is None else self._clocks(f"seats[{index}].clocks", seat.clocks)
            for index, seat in enumerate(self.t.seats)
        ]
        if self.t.opening < 0:
            raise mismatch("opening", f"{self.t.opening} steps: an opening cannot be negative")
        limit = self.t.max_steps
        if limit is not None and not self.t.opening < limit:
            raise mismatch("max_steps", f"{limit}, but the opening is {self.t.opening} steps")
        if limit is not None and len(self.t.steps) > limit:
            raise mismatch("steps", f"{len(self.t.steps)} played, but max_steps is {limit}")
        if self.t.end_reason == ADJUDICATED and len(self.t.steps) != limit:
            raise mismatch(
                "end", f"adjudicated after step {len(self.t.steps)}, but max_steps is {limit}"
            )
        book = self.t.book
        if book is not None and self.t.opening != len(book.steps):
            raise mismatch(
                "opening", f"{self.t.opening} steps, but its book's line has {len(book.steps)}"
            )
        if self.t.lost_attempts < 0:
            raise mismatch("lost_attempts", f"{self.t.lost_attempts}: a count cannot be negative")
        if not 0 <= self.t.seed <= MAX_SEED:
            raise mismatch("seed", f"{self.t.seed} is not a seed (0 to {MAX_SEED})")
        started, ended = (self._time_of(where) for where in ("started_at", "ended_at"))
        if ended < started:
            raise mismatch(
                "ended_at", f"{self.t.ended_at} is before started_at {self.t.started_at}"
            )
        # No answer can have taken longer than the whole match.
        longest_ms = (ended - started).total_seconds() * 1000 + _WALL_CLOCK_SLACK_MS
        self.times = AnswerTimes(seat_clocks, self.roles, self.untimed, longest_ms)
        check_rules_fault_header(self.t, self.game)
        check_state_limits_header(self.t, self.game)
        if seats_disagree(self.t):
            players = " vs ".join(seat.player for seat in self.t.seats)
            raise mismatch(
                "seats", f"{players}, in this order, is not the seating of {self.t.match_id}"
            )

    def _clocks(self, where: str, recorded: dict[str, int]) -> Clocks:
        """The clocks a record holds at `where`, with the match's margin."""
        if sorted(recorded) != sorted(CLOCK_FIELDS):
            raise mismatch(where, f"fields {sorted(recorded)}, expected {sorted(CLOCK_FIELDS)}")
        try:
            return Clocks(**recorded, margin_ms=self.t.time_margin_ms)
        except ConfigError as error:
            raise mismatch(where, str(error)) from None

    def _time_of(self, where: str) -> datetime:
        text = getattr(self.t, where)
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            raise mismatch(where, f"{text!r} is not an ISO 8601 time") from None
        if moment.tzinfo is None:
            raise mismatch(where, f"{text!r} has no time zone (the referee writes UTC, with Z)")
        return moment

    def _known_roles(self, roles: Iterable[str], place: str | int) -> None:
        """Every name in `roles` is a role of the game; `place` is a part of the file or a step."""
        for role in roles:
            if role not in self.roles:
                what = f"{role!r} is not a role of {self.game.id}"
                raise (
                    step_mismatch(place, what) if isinstance(place, int) else mismatch(place, what)
                )

    def _index_faults(self) -> None:
        previous = 0
        for fault in self.t.faults:
            self._known_roles([fault.role], fault.step)
            if fault.step < previous:
                raise step_mismatch(
                    fault.step, f"fault listed after one at step {previous}", fault.role
                )
            if fault.role in self.faults[fault.step]:
                raise step_mismatch(fault.step, "two faults recorded for one request", fault.role)
            if fault.kind is FaultKind.RESIGNED and fault.role not in self.untimed:
                raise step_mismatch(
                    fault.step,
                    "resigned, but only a person can, and a program played it",
                    fault.role,
                )
            if self.t.policy == Policy.FORFEIT and fault.replacement is not None:
                raise step_mismatch(
                    fault.step, "a fault under the forfeit policy has no replacement", fault.role
                )
            if fault.kind in policy.CONCEDED and fault.replacement is not None:
                raise step_mismatch(
                    fault.step, f"{fault.kind}, which forfeits, yet has a replacement", fault.role
                )
            self.faults[fault.step][fault.role] = fault
            previous = fault.step
        if self.t.policy == Policy.FORFEIT and self.t.steps and 0 in self.faults:
            role = next(iter(self.faults[0]))
            raise step_mismatch(1, "played after a start fault under the forfeit policy", role)

    def _step(self, number: int, step: Step, state: Hashable) -> Hashable:
        recorded, moves, times_ms = step.step, step.moves, step.times_ms
        if recorded != number:
            if recorded > number:
                raise step_mismatch(number, f"missing: the next step recorded is step {recorded}")
            raise step_mismatch(number, f"numbered {recorded}: steps must count up from 1")
        self.at = number - 1
        if self.game.is_terminal(state):
            raise step_mismatch(number, f"played after the game ended at step {number - 1}")
        self._known_roles(moves, number)
        self._known_roles(times_ms, number)
        if step.at_ms is not None:
            if not self.last_at_ms <= step.at_ms <= self.times.longest_ms:
                raise step_mismatch(
                    number, f"decided at {step.at_ms} ms, out of the match's course"
                )
            self.last_at_ms = step.at_ms
        legal = [self.game.legal_moves(state, role) for role in range(len(self.roles))]
        joint = [self._legal_move(number, role, moves, legal[role]) for role in range(len(legal))]
        faults = self.faults.get(number, {})
        self._check_percepts(number, step, state, joint)
        self.at = number
        if number <= self.t.opening and not self.imported:
            self._check_opening(number, joint, legal, step, faults)
            state = self.game.next_state(state, joint)
            self.frames.append(Frame(number, state, dict(moves), {}, []))
            return state
        if self.imported:
            state = self.game.next_state(state, joint)
            self.frames.append(Frame(number, state, dict(moves), {}, list(faults.values())))
            return state
        answered = {role for role in self.ggp if self.roles[role] in {*times_ms, *faults}}
        asked = {self.roles[role] for role in policy.asked(legal, self.out, answered)}
        for name in [*times_ms, *faults]:
            if name not in asked:
                out = self.roles.index(name) in self.out
                why = "it was out of the match" if out else "it had no choice"
                raise step_mismatch(number, f"recorded as asked for a move, but {why}", name)
        had = self.times.check_times(
            number, [name for name in self.roles if name in asked], step, faults
        )
        answers: dict[int, Move | FaultKind] = {
            role: faults[name].kind if name in faults else joint[role]
            for role, name in enumerate(self.roles)
            if name in asked
        }
        decided = policy.resolve(Policy(self.t.policy), legal, self.out, answers, self.rng)
        self._check_drawn_moves(number, joint, faults, decided)
        self.out = decided.out
        state = self.game.next_state(state, joint)
        self.frames.append(
            Frame(number, state, dict(moves), dict(times_ms), list(faults.values()), had)
        )
        return state

    def _check_percepts(
        self, number: int, step: Step, state: Hashable, joint: Sequence[Move]
    ) -> None:
        """In a game of imperfect information, each role was told exactly the percepts the
        rules give it after the joint move; in any other, no percepts are recorded."""
        if not self.game.imperfect:
            if step.percepts is not None:
                raise step_mismatch(number, "percepts recorded in a game of perfect information")
            return
        if step.percepts is None:
            # Interrupted while its percepts were computed, a match is aborted before anyone
            # was told of its last step.
            if number == len(self.t.steps) and self.t.end_reason == EndReason.ABORTED:
                return
            raise step_mismatch(number, "no percepts recorded in a game of imperfect information")
        self._known_roles(step.percepts, number)
        seen = self.game.percepts(state, joint)
        for name, expected in zip(self.roles, seen, strict=True):
            told = step.percepts.get(name)
            if told is None or sorted(told) != sorted(expected):
                said = "nothing" if told is None else " ".join(told) or "no percept"
                rules = " ".join(expected) or "no percept"
                raise step_mismatch(number, f"told {said}, but the rules give {rules}", name)

    def _check_opening(
        self,
        number: int,
        joint: Sequence[Move],
        legal: Sequence[Sequence[Move]],
        step: Step,
        faults: dict[str, Fault],
    ) -> None:
        """A step of the opening: nobody asked, and the moves of its book's line, or those the
        seed draws."""
        asked = [*step.times_ms, *faults]
        if asked:
            raise step_mismatch(
                number, "recorded as asked for a move, but it is in the opening", asked[0]
            )
        book = self.t.book
        if book is not None:
            where = f"line {book.line} of the book {book.source}"
            expected, source = book.steps[number - 1], f"the opening's move at {where}"
        else:
            expected = list(policy.opening_move(legal, self.opening))
            source = "the opening's move drawn with the match seed"
        for role, name in enumerate(self.roles):
            if role >= len(expected) or joint[role] != expected[role]:
                shown = expected[role] if role < len(expected) else "missing"
                raise step_mismatch(
                    number, f"{source} is {shown}, but the transcript has {joint[role]}", name
                )

    def _legal_move(
        self, step: int, role: int, moves: dict[str, str], legal: Sequence[Move]
    ) -> Move:
        name = self.roles[role]
        if name not in moves:
            raise step_mismatch(step, "no move recorded", name)
        text = moves[name]
        if text in legal:
            return Move(text)
        shown = ", ".join(legal[:8]) + (f" and {len(legal) - 8} more" if len(legal) > 8 else "")
        try:
            self.game.parse_move(text)
        except MoveParseError:
            raise step_mismatch(step, f"{text!r} is not a move of {self.game.id}", name) from None
        raise step_mismatch(step, f"played {text}, which is not legal here (legal: {shown})", name)

    def _check_drawn_moves(
        self,
        step: int,
        joint: Sequence[Move],
        faults: dict[str, Fault],
        decided: policy.Resolution,
    ) -> None:
        """The moves the referee chose itself must be the ones the match seed draws, in order."""
        for role, drawn in decided.drawn.items():
            if joint[role] != drawn:
                raise step_mismatch(
                    step,
                    f"out of the match, so its move is drawn with the match seed: {drawn},"
                    f" but the transcript has {joint[role]}",
                    self.roles[role],
                )
        for role, name in enumerate(self.roles):
            fault = faults.get(name)
            if fault is None:
                continue
            if role in decided.forfeits:
                raise step_mismatch(
                    step,
                    f"a {fault.kind} fault under the {self.t.policy} policy, yet the match went on",
                    name,
                )
            drawn = decided.replacements[role]
            _check_replacement(step, name, fault, drawn)
            if joint[role] != drawn:
                raise step_mismatch(
                    step,
                    f"played {joint[role]}, but its fault records the replacement {drawn}",
                    name,
                )

    def _check_end(self, state: Hashable) -> None:
        last = len(self.t.steps)
        after = f"after step {last}" if last else "at the start"
        terminal = self.game.is_terminal(state)
        reason = self.t.end_reason
        forfeit_step = self.t.forfeit_step
        late = [step for step in self.faults if step > last and step != 0]
        if late and late != [forfeit_step]:
            role = next(iter(self.faults[late[0]]))
            raise step_mismatch(late[0], "a fault at a step that was never played", role)
        if terminal and reason != EndReason.TERMINAL:
            raise mismatch("end", f"recorded as {reason}, but the game is over {after}")
        ending = [
            (step, fault)
            for step, faults in self.faults.items()
            for fault in faults.values()
            if self.policy is not None and policy.forfeits(self.policy, fault.kind)
        ]
        if reason == EndReason.ABORTED and ending:
            step, fault = ending[0]
            raise mismatch(
                "end",
                f"recorded as aborted, but under the {self.t.policy} policy the {fault.kind}"
                f" fault at step {step} ended the match",
            )
        if reason == ADJUDICATED:
            self._check_goals(
                dict(zip(self.roles, self.game.goals(state), strict=True)),
                f"the rules give at step {last}",
            )
        elif reason == EndReason.TERMINAL:
            if not terminal:
                raise mismatch(
                    "end", f"recorded as ended by the rules, but the game is not over {after}"
                )
            self._check_goals(
                dict(zip(self.roles, self.game.goals(state), strict=True)), "the rules give"
            )
        elif reason == EndReason.FORFEIT:
            assert self.policy is not None and forfeit_step is not None  # the header's check
            faulty = self.faults.get(forfeit_step, {})
            if not faulty:
                raise mismatch(
                    "end", f"recorded as a forfeit, but no fault is recorded at step {forfeit_step}"
                )
            if not any(policy.forfeits(self.policy, fault.kind) for fault in faulty.values()):
                raise mismatch("end", f"a forfeit, but the policy is {self.t.policy}")
            losers = [
                self.roles.index(name)
                for name, fault in faulty.items()
                if policy.forfeits(self.policy, fault.kind)
            ]
            if forfeit_step:
                had = self._check_forfeit_step(forfeit_step, state, faulty)
                # Shown as a step of its own: the board it was asked in, and its faults.
                self.frames.append(
                    Frame(forfeit_step, state, faults=list(faulty.values()), asked=had)
                )
            goals = policy.forfeit_goals(len(self.roles), losers)
            self._check_goals(dict(zip(self.roles, goals, strict=True)), "the forfeit gives")

    def _check_forfeit_step(
        self, step: int, state: Hashable, faulty: dict[str, Fault]
    ) -> dict[str, int]:
        """The faults that ended a match were made by roles asked at that step, as timed, and
        the other faults of the step (a resignation's under `random`) drew their replacements
        with the match seed, though the step was not played. Returns the time each role
        asked there had."""
        legal = [self.game.legal_moves(state, role) for role in range(len(self.roles))]
        answered = {role for role in self.ggp if self.roles[role] in faulty}
        asked = policy.asked(legal, self.out, answered)
        for name, fault in faulty.items():
            if self.roles.index(name) not in asked or step <= self.t.opening:
                raise step_mismatch(step, "a forfeit by a role that was not asked for a move", name)
            self.times.check_fault(fault, self.times.allowance_ms(name))
        assert self.policy is not None  # the header's check
        # The moves of the roles that answered are not recorded; they draw nothing either.
        answers: dict[int, Move | FaultKind] = {
            role: faulty[self.roles[role]].kind if self.roles[role] in faulty else legal[role][0]
            for role in asked
        }
        decided = policy.resolve(self.policy, legal, self.out, answers, self.rng)
        for name, fault in faulty.items():
            _check_replacement(step, name, fault, decided.replacements.get(self.roles.index(name)))
        return {self.roles[role]: self.times.allowance_ms(self.roles[role]) for role in asked}

    def _check_goals(self, expected: dict[str, int], source: str) -> None:
        assert self.t.goals is not None
        for name in self.roles:
            if self.t.goals[name] != expected[name]:
                raise mismatch(
                    "goals",
                    f"{self.t.goals[name]} is recorded, {source} {expected[name]}",
                    name,
                )


# How far the wall clock that stamps started_at and ended_at may lag the monotonic clock that
# times answers: the two are read at different moments.
_WALL_CLOCK_SLACK_MS = 1_000
