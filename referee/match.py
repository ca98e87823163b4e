"""The referee loop: rules + clocks + fault policy -> transcript.

Every step: each role's legal moves; `go` to every role the policy asks, at the same time
and timed independently; each answer judged by the clock and checked against the rules;
the policy decides the joint move; it is applied and sent to every player.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import secrets
from collections.abc import Awaitable, Callable, Hashable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from referee import clock, policy
from referee.clock import SEND_LIMIT_S, Clocks
from referee.computing import computed
from referee.errors import (
    FaultKind,
    GameFault,
    IllegalMoveFault,
    MoveParseError,
    PlayerCrashed,
    PlayerFault,
    ProtocolViolation,
)
from referee.games import Game, Move
from referee.players.base import Fingerprint, Player, PlayerKind, quoted
from referee.policy import Policy
from referee.protocol import End, EndReason, Go, Moves, Sees, Start, is_ready, start_rules
from referee.records.signing import SigningKey
from referee.records.store import store_transcript
from referee.records.transcript import (
    ADJUDICATED,
    BookLine,
    Fault,
    RulesFault,
    Seat,
    Step,
    Transcript,
    rules_fault,
    rulesheet_of,
    state_limits,
    utc_now,
)
from referee.sandbox.cores import current_core

# How the fault of an answer that is no move of the game says so.
NOT_A_MOVE = "which is not a move of"
# What a start fault says of an answer that is not `ready` (validate tells it apart by this).
NOT_READY = "instead of ready"
# A program that answered `start` with something else is watched for its exit until its
# start clock is over, and at least this long: one that dies then wrote why it could not
# start (the JVM does, on standard output), not an answer. A fixed wait alone would take a
# runtime slow to exit on a loaded machine for one that answered.
DYING_WORDS_S = 1.0


@dataclass(frozen=True)
class MatchSetup:
    """What a match is: its id, game, players in role order, clocks, policy and seed.

    `clocks` are the match's; `seat_clocks`, if given, each seat's own in role order (a
    tournament player's own clocks: time odds), with the match's margin. The transcript
    records the match's clocks, and a seat's own where they differ.
    """

    match_id: str
    game: Game
    players: Sequence[Player]
    clocks: Clocks = field(default_factory=Clocks)
    policy: Policy = Policy.FORFEIT
    seed: int = 0
    # Steps the referee plays before the players choose: at random (from the seed), or with
    # a book's line (`book`), its steps.
    opening: int = 0
    # Of each seat's player, recorded in the transcript; none for a match outside a tournament.
    fingerprints: Sequence[Fingerprint | None] = ()
    # Whether a seat may think while it is not asked; else it is paused from the moment its
    # answer is read until its next request is written, and cannot take another's CPU time.
    ponder: bool = False
    book: BookLine | None = None
    # The step after which a game not over yet ends with the goals its rules give there.
    max_steps: int | None = None
    seat_clocks: Sequence[Clocks] = ()

    def __post_init__(self) -> None:
        if self.seat_clocks and len(self.seat_clocks) != len(self.game.roles):
            raise ValueError(f"{len(self.seat_clocks)} seats' clocks for {len(self.game.roles)}")
        if any(own.margin_ms != self.clocks.margin_ms for own in self.seat_clocks):
            raise ValueError("a match has one time margin: each seat's clocks must have it")

    def clocks_of(self, role: int) -> Clocks:
        """The clocks of the seat of `role` (its index): its own, else the match's."""
        return self.seat_clocks[role] if self.seat_clocks else self.clocks


@dataclass(frozen=True)
class _Answer:
    """What one request got: the answer and its time, if one came, and its fault, if any;
    the CPU time the player used for it, where it was counted."""

    text: str
    elapsed_ms: float | None
    fault: PlayerFault | None
    cpu_ms: float | None = None


StepCallback = Callable[[int, tuple[Move, ...], Hashable], None]


class Match:
    """One match in progress: `run` plays it out, `transcript` records it as far as it went."""

    def __init__(self, setup: MatchSetup) -> None:
        self.setup = setup
        self.game = setup.game
        self.roles = setup.game.roles
        self.rng = random.Random(setup.seed)
        self.clocks = [setup.clocks_of(role) for role in range(len(self.roles))]
        self.banks = [own.bank() for own in self.clocks]
        self.out: frozenset[int] = frozenset()
        # GGP players are asked at every step, and judged there, as their managers do.
        self.forced_too = frozenset(
            role for role, player in enumerate(setup.players) if player.spec.kind is PlayerKind.HTTP
        )
        self.faults: list[Fault] = []
        self.steps: list[Step] = []
        self.start_times: dict[str, float] = {}
        self.start_cpu: dict[str, float] = {}
        self.started_at = utc_now()
        self.began = clock.now()
        self.result: tuple[EndReason, dict[str, int]] | None = None
        # Whether the result is `max_steps`'s: players are told the rules ended it.
        self.adjudicated = False
        self.rules_fault: RulesFault | None = None

    async def run(self, on_step: StepCallback | None = None) -> Transcript:
        """Play the match to its end with started players; the transcript of it."""
        try:
            forfeits = await self._start()
            state = self.game.initial_state()
            step = 0
            opening = policy.opening_rng(self.setup.seed)
            try:
                over = await computed(self.game, self.game.is_terminal, state)
                while not forfeits and not over:
                    step += 1
                    if step <= self.setup.opening:
                        joint = self._opening_step(step, state, opening)
                    else:
                        joint, forfeits = await self._step(step, state)
                    if forfeits:
                        break
                    told = await self._told(step, state, joint)
                    state = await computed(self.game, self.game.next_state, state, joint)
                    over = await computed(self.game, self.game.is_terminal, state)
                    if over:
                        # Decided now: an interruption while the players are told cannot undo it.
                        self._decide(EndReason.TERMINAL, self.game.goals(state))
                    elif step == self.setup.max_steps:
                        self._decide(
                            EndReason.TERMINAL, await computed(self.game, self.game.goals, state)
                        )
                        self.adjudicated = over = True
                    if on_step is not None:
                        on_step(step, joint, state)
                    await self._tell(told)
                if over and self.result is None:  # a game over before any move
                    self._decide(EndReason.TERMINAL, self.game.goals(state))
            except GameFault as fault:
                # The rules cannot say what state `step` is: the match ends there, and nobody
                # is to blame but the rules.
                self.rules_fault = rules_fault(self.game, step, fault)
        except asyncio.CancelledError:
            reason, goals = self.result or (EndReason.ABORTED, dict.fromkeys(self.roles, 0))
            with contextlib.suppress(BaseException):
                end = End(tuple(goals.values()), reason)
                async with asyncio.timeout(1.0):
                    await self._tell_all(str(end))
            raise
        if self.rules_fault is not None:
            self.result = None
            await self._tell_all(str(End((0,) * len(self.roles), EndReason.ABORTED)))
            return self.transcript()
        if forfeits:
            self._decide(EndReason.FORFEIT, policy.forfeit_goals(len(self.roles), forfeits))
        assert self.result is not None
        reason, goals = self.result
        await self._tell_all(str(End(tuple(goals.values()), reason)))
        return self.transcript()

    async def _told(self, step: int, state: Hashable, joint: tuple[Move, ...]) -> list[str]:
        """Each seat's line of a step, to be sent once the next state is computed: every
        move, or in a game of imperfect information its own move and its percepts, which
        the step's record keeps."""
        if not self.game.imperfect:
            return [str(Moves(step, joint))] * len(self.roles)
        seen = await computed(self.game, self.game.percepts, state, joint)
        self.steps[-1] = replace(
            self.steps[-1],
            percepts={role: list(row) for role, row in zip(self.roles, seen, strict=True)},
        )
        return [str(Sees(step, move, row)) for move, row in zip(joint, seen, strict=True)]

    def _decide(self, reason: EndReason, goals: Sequence[int]) -> None:
        self.result = reason, dict(zip(self.roles, goals, strict=True))

    async def _start(self) -> frozenset[int]:
        clocks = self.clocks
        for player in self.setup.players:
            player.new_match()
        replies = await asyncio.gather(
            *(
                self._ask(
                    role,
                    str(
                        Start(
                            self.setup.match_id,
                            self.game.id,
                            name,
                            clocks[role].start_ms,
                            clocks[role].play_ms,
                            start_rules(self.game),
                        )
                    ),
                    clocks[role].start_ms,
                )
                for role, name in enumerate(self.roles)
            )
        )
        not_ready = [
            role
            for role, answer in enumerate(replies)
            if answer.fault is None and not is_ready(answer.text)
        ]
        gone = await asyncio.gather(
            *(
                self.setup.players[role].gone_within(
                    max(
                        DYING_WORDS_S,
                        (clocks[role].start_ms - (replies[role].elapsed_ms or 0)) / 1000,
                    )
                )
                for role in not_ready
            )
        )
        dying = dict(zip(not_ready, gone, strict=True))
        faulty = []
        for role, answer in enumerate(replies):
            fault = answer.fault
            elapsed_ms = answer.elapsed_ms
            if role in dying:
                died = dying[role]
                said = quoted(answer.text)
                if died is None:
                    fault = ProtocolViolation(f"answered {said} {NOT_READY}")
                else:
                    fault = type(died)(f"{died.detail}, having written {said} {NOT_READY}")
                    elapsed_ms = None  # what it wrote was no answer
            if fault is not None:
                self.faults.append(
                    Fault(0, self.roles[role], fault.kind, fault.detail, None, elapsed_ms)
                )
                faulty.append(role)
            else:
                assert answer.elapsed_ms is not None  # an answer in time has a time
                self.start_times[self.roles[role]] = answer.elapsed_ms
                if answer.cpu_ms is not None:
                    self.start_cpu[self.roles[role]] = answer.cpu_ms
        if not self.setup.ponder:
            # Those watched for their exit ran meanwhile; a seat left out is never asked again.
            for player in self.setup.players:
                player.pause()
        forfeits, self.out = policy.start_outcome(self.setup.policy, faulty)
        return forfeits

    async def _step(self, step: int, state: Hashable) -> tuple[tuple[Move, ...], frozenset[int]]:
        legal = [self.game.legal_moves(state, role) for role in range(len(self.roles))]
        asked = policy.asked(legal, self.out, self.forced_too)
        asks = {
            role: self._ask(role, str(Go(step, self._allowance_ms(role), legal[role])))
            for role in self._write_order(asked)
        }
        # One player asked, as in most steps of a game of turns, needs no task.
        answered = (
            [await asks[asked[0]]] if len(asks) == 1 else await asyncio.gather(*asks.values())
        )
        by_role = dict(zip(asks, answered, strict=True))
        replies = [by_role[role] for role in asked]
        # A time goes with the move it answered for: the step's when the move is the player's
        # own, the fault's when the answer was late or not acceptable.
        times: dict[str, float] = {}
        cpu: dict[str, float] = {}
        answers: dict[int, Move | FaultKind] = {}
        faults: dict[int, tuple[PlayerFault, float | None]] = {}
        for role, answer in zip(asked, replies, strict=True):
            checked = answer.fault or self._check_move(answer.text, legal[role])
            if isinstance(checked, PlayerFault):
                faults[role] = checked, answer.elapsed_ms
                answers[role] = checked.kind
            else:
                assert answer.elapsed_ms is not None  # an answer in time has a time
                times[self.roles[role]] = answer.elapsed_ms
                if answer.cpu_ms is not None:
                    cpu[self.roles[role]] = answer.cpu_ms
                answers[role] = checked
        decided = policy.resolve(self.setup.policy, legal, self.out, answers, self.rng)
        self.out = decided.out
        for role, (fault, elapsed_ms) in faults.items():
            replacement = decided.replacements.get(role)
            self.faults.append(
                Fault(step, self.roles[role], fault.kind, fault.detail, replacement, elapsed_ms)
            )
        if not decided.forfeits:
            at_ms = round((clock.now() - self.began) * 1000, 3)
            moves: dict[str, str] = dict(zip(self.roles, decided.joint, strict=True))
            self.steps.append(Step(step, moves, times, at_ms, cpu))
        return decided.joint, decided.forfeits

    def _allowance_ms(self, role: int) -> int:
        """The time a seat has for its next answer, as its `go` tells it: its play clock and
        what its bank holds (never the margin)."""
        return self.banks[role].allowance_ms(self.clocks[role].play_ms)

    def _write_order(self, asked: Sequence[int]) -> list[int]:
        """The seats asked at once, those on the core this loop runs on last: a seat woken on
        it may take the core at once, and a seat written after would wait for its answer."""
        if len(asked) == 1:
            return list(asked)
        here = current_core()
        if here is None:
            return list(asked)
        return sorted(asked, key=lambda role: here in (self.setup.players[role].cores or ()))

    def _opening_step(self, step: int, state: Hashable, rng: random.Random) -> tuple[Move, ...]:
        """A step of the opening: the book's, or drawn by the referee; asked of nobody, told to
        everyone."""
        if self.setup.book is not None:
            joint = tuple(Move(move) for move in self.setup.book.steps[step - 1])
        else:
            legal = [self.game.legal_moves(state, role) for role in range(len(self.roles))]
            joint = policy.opening_move(legal, rng)
        at_ms = round((clock.now() - self.began) * 1000, 3)
        self.steps.append(Step(step, dict(zip(self.roles, joint, strict=True)), {}, at_ms))
        return joint

    async def _ask(self, role: int, line: str, start_ms: int | None = None) -> _Answer:
        """One request: `start` timed by the start clock, or `go` by the play clock and bank;
        waited for the margin more, if the seat's clocks have one."""
        bank = self.banks[role]
        clocks = self.clocks[role]
        play_ms = clocks.play_ms
        limit_ms = start_ms if start_ms is not None else bank.allowance_ms(play_ms)
        player = self.setup.players[role]
        try:
            # A paused player is resumed for its request, before its clock starts.
            reply = await player.request(line, clocks.wait_ms(limit_ms) / 1000)
        except PlayerFault as fault:
            return _Answer("", None, fault)
        finally:
            if not self.setup.ponder:
                player.pause()
        if reply is None:
            return _Answer("", None, clocks.verdict(None, limit_ms))
        # Judged as recorded, so that a replay of the transcript reaches the same verdicts.
        elapsed_ms = round(reply.elapsed_ms, 3)
        cpu_ms = None if reply.cpu_ms is None else round(reply.cpu_ms, 3)
        if player.spec.kind is PlayerKind.HUMAN:
            return _Answer(reply.text, elapsed_ms, None)  # people are not timed
        if start_ms is not None:
            late = clocks.verdict(elapsed_ms, limit_ms)
        else:
            late = bank.charge(play_ms, elapsed_ms)
        return _Answer(reply.text, elapsed_ms, late, cpu_ms)

    def _check_move(self, text: str, legal: Sequence[Move]) -> Move | PlayerFault:
        """The move an answer names, or why it is not an acceptable one."""
        try:
            move = self.game.parse_move(text)
        except MoveParseError:
            return ProtocolViolation(f"answered {quoted(text)}, {NOT_A_MOVE} {self.game.id}")
        if move not in legal:
            return IllegalMoveFault(f"played {move}, which is not legal here")
        return move

    async def _tell_all(self, line: str) -> None:
        """Send a line that needs no answer to every player still there."""
        await self._tell([line] * len(self.roles))

    async def _tell(self, lines: Sequence[str]) -> None:
        """Send each player still there its line (role order), which needs no answer.

        A player that cannot take it has crashed; its next request says so, at its own step.
        """
        waiting = []
        for role, (player, line) in enumerate(zip(self.setup.players, lines, strict=True)):
            if role not in self.out:
                with contextlib.suppress(PlayerCrashed):
                    taken = player.post(line, SEND_LIMIT_S)
                    if taken is not None:
                        waiting.append(_crash_aside(taken))
        if waiting:
            await asyncio.gather(*waiting)

    def transcript(self) -> Transcript:
        """The record of the match so far: aborted, with no goals, unless it has ended."""
        reason, goals = self.result or (EndReason.ABORTED, None)
        prints = list(self.setup.fingerprints) or [None] * len(self.roles)
        seats = [
            _seat(role, player, print_, own.recorded() if own != self.setup.clocks else None)
            for role, player, print_, own in zip(
                self.roles, self.setup.players, prints, self.clocks, strict=True
            )
        ]
        limits = state_limits(self.game)
        return Transcript(
            match_id=self.setup.match_id,
            game=self.game.id,
            seed=self.setup.seed,
            seats=seats,
            clocks=self.setup.clocks.recorded(),
            time_margin_ms=self.setup.clocks.margin_ms,
            policy=str(self.setup.policy),
            started_at=self.started_at,
            ended_at=utc_now(),
            start_times_ms=self.start_times,
            start_cpu_ms=self.start_cpu,
            steps=self.steps,
            faults=self.faults,
            end_reason=ADJUDICATED if self.adjudicated else str(reason),
            goals=goals,
            rulesheet=rulesheet_of(self.game),
            opening=self.setup.opening,
            book=self.setup.book,
            max_steps=self.setup.max_steps,
            rules_fault=self.rules_fault,
            state_memory_mb=None if limits is None else limits.memory_mb,
            state_seconds=None if limits is None else limits.seconds,
        )


def _seat(
    role: str, player: Player, print_: Fingerprint | None, clocks: dict[str, int] | None
) -> Seat:
    """The record of who played `role`: its command and files named as `spec.recorded` names
    them, from the program's own directory, never by where that is on this machine; and its
    own clocks, where they are not the match's."""
    spec = player.spec
    recorded = dict(zip(spec.command, spec.recorded, strict=True))
    return Seat(
        role,
        spec.name,
        list(spec.recorded),
        str(player.log_path) if player.log_path else None,
        print_.digest if print_ else None,
        {recorded.get(path, path): sha for path, sha in print_.files.items()} if print_ else None,
        clocks,
    )


async def _crash_aside(taken: Awaitable[None]) -> None:
    """Wait for a line to be taken; a player that crashes meanwhile is its next request's
    business."""
    with contextlib.suppress(PlayerCrashed):
        await taken


def new_match_id(game_id: str) -> str:
    """A fresh match id: the game, the UTC time, and four random hex digits."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{game_id}-{stamp}-{secrets.token_hex(2)}"


async def play_recorded(
    setup: MatchSetup,
    record: Callable[[Transcript], Awaitable[None]],
    on_step: StepCallback | None = None,
) -> Transcript:
    """Play a match with started players and give its transcript to `record`, whatever
    happens: a match that is interrupted, or fails in the referee, is recorded as aborted."""
    match = Match(setup)
    try:
        await match.run(on_step)
    finally:
        transcript = match.transcript()
        await record(transcript)
    return transcript


async def play_match(
    setup: MatchSetup, out: Path, key: SigningKey, on_step: StepCallback | None = None
) -> Transcript:
    """Play a match with started players and write its transcript, signed, whatever happens."""
    return await play_recorded(
        setup, lambda transcript: store_transcript(out, transcript, key), on_step
    )


async def play_fresh(
    setup: MatchSetup, out: Path, key: SigningKey, on_step: StepCallback | None = None
) -> Transcript:
    """Start the players, play the match, and end the players whatever happens."""
    started: list[Player] = []
    try:
        for player in setup.players:
            await player.start()
            started.append(player)
        return await play_match(setup, out, key, on_step)
    finally:
        await asyncio.gather(*(player.close() for player in started), return_exceptions=True)
