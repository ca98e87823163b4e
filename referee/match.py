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
from collections.abc import Callable, Hashable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from referee import clock, policy
from referee.clock import SEND_LIMIT_S, Clocks, TimeBank
from referee.errors import (
    FaultKind,
    IllegalMoveFault,
    MoveParseError,
    PlayerCrashed,
    PlayerFault,
    ProtocolViolation,
)
from referee.games import Game, Move
from referee.players.base import Player, Reply, quoted
from referee.policy import Policy
from referee.protocol import End, EndReason, Go, Moves, Start, is_ready
from referee.records.transcript import Fault, Seat, Step, Transcript, utc_now, write_transcript


@dataclass(frozen=True)
class MatchSetup:
    """What a match is: its id, game, players in role order, clocks, policy and seed."""

    match_id: str
    game: Game
    players: Sequence[Player]
    clocks: Clocks = field(default_factory=Clocks)
    policy: Policy = Policy.FORFEIT
    seed: int = 0


StepCallback = Callable[[int, tuple[Move, ...], Hashable], None]


class Match:
    """One match in progress: `run` plays it out, `transcript` records it as far as it went."""

    def __init__(self, setup: MatchSetup) -> None:
        self.setup = setup
        self.game = setup.game
        self.roles = setup.game.roles
        self.rng = random.Random(setup.seed)
        self.banks = [TimeBank(setup.clocks.time_bank_ms) for _ in self.roles]
        self.out: frozenset[int] = frozenset()
        self.faults: list[Fault] = []
        self.steps: list[Step] = []
        self.start_times: dict[str, float] = {}
        self.started_at = utc_now()
        self.result: tuple[EndReason, dict[str, int]] | None = None

    async def run(self, on_step: StepCallback | None = None) -> Transcript:
        """Play the match to its end with started players; the transcript of it."""
        try:
            forfeits = await self._start()
            state = self.game.initial_state()
            step = 0
            while not forfeits and not self.game.is_terminal(state):
                step += 1
                joint, forfeits = await self._step(step, state)
                if forfeits:
                    break
                state = self.game.next_state(state, joint)
                if on_step is not None:
                    on_step(step, joint, state)
                await self._tell_all(str(Moves(step, joint)))
        except asyncio.CancelledError:
            aborted = End((0,) * len(self.roles), EndReason.ABORTED)
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(self._tell_all(str(aborted)), 1.0)
            raise
        if forfeits:
            goals = policy.forfeit_goals(len(self.roles), forfeits)
            reason = EndReason.FORFEIT
        else:
            goals = self.game.goals(state)
            reason = EndReason.TERMINAL
        self.result = reason, dict(zip(self.roles, goals, strict=True))
        await self._tell_all(str(End(goals, reason)))
        return self.transcript()

    async def _start(self) -> frozenset[int]:
        clocks = self.setup.clocks
        for player in self.setup.players:
            player.new_match()
        replies = await asyncio.gather(
            *(
                self._ask(
                    role,
                    str(
                        Start(
                            self.setup.match_id, self.game.id, name, clocks.start_ms, clocks.play_ms
                        )
                    ),
                    clocks.start_ms,
                )
                for role, name in enumerate(self.roles)
            )
        )
        faulty = []
        for role, reply in enumerate(replies):
            if not isinstance(reply, PlayerFault) and not is_ready(reply.text):
                reply = ProtocolViolation(f"answered {quoted(reply.text)} instead of ready")
            if isinstance(reply, PlayerFault):
                self.faults.append(Fault(0, self.roles[role], reply.kind, reply.detail))
                faulty.append(role)
            else:
                self.start_times[self.roles[role]] = round(reply.elapsed_ms, 3)
        forfeits, self.out = policy.start_outcome(self.setup.policy, faulty)
        return forfeits

    async def _step(self, step: int, state: Hashable) -> tuple[tuple[Move, ...], frozenset[int]]:
        legal = [self.game.legal_moves(state, role) for role in range(len(self.roles))]
        asked = policy.asked(legal, self.out)
        play_ms = self.setup.clocks.play_ms
        replies = await asyncio.gather(
            *(
                self._ask(role, str(Go(step, self.banks[role].allowance_ms(play_ms), legal[role])))
                for role in asked
            )
        )
        times: dict[str, float] = {}
        answers: dict[int, Move | FaultKind] = {}
        faults: dict[int, PlayerFault] = {}
        for role, reply in zip(asked, replies, strict=True):
            if isinstance(reply, Reply):
                times[self.roles[role]] = round(reply.elapsed_ms, 3)
                answer = self._check_move(reply.text, legal[role])
            else:
                answer = reply
            if isinstance(answer, PlayerFault):
                faults[role] = answer
                answers[role] = answer.kind
            else:
                answers[role] = answer
        decided = policy.resolve(self.setup.policy, legal, self.out, answers, self.rng)
        self.out = decided.out
        for role, fault in faults.items():
            replacement = decided.replacements.get(role)
            self.faults.append(Fault(step, self.roles[role], fault.kind, fault.detail, replacement))
        if not decided.forfeits:
            self.steps.append(Step(step, dict(zip(self.roles, decided.joint, strict=True)), times))
        return decided.joint, decided.forfeits

    async def _ask(self, role: int, line: str, start_ms: int | None = None) -> Reply | PlayerFault:
        """One request: `start` timed by the start clock, or `go` by the play clock and bank."""
        bank = self.banks[role]
        play_ms = self.setup.clocks.play_ms
        limit_ms = start_ms if start_ms is not None else bank.allowance_ms(play_ms)
        try:
            reply = await self.setup.players[role].request(line, limit_ms / 1000)
        except PlayerFault as fault:
            return fault
        elapsed_ms = reply.elapsed_ms if reply is not None else None
        if start_ms is not None:
            late = clock.verdict(elapsed_ms, limit_ms)
        else:
            late = bank.charge(play_ms, elapsed_ms)
        if late is not None:
            return late
        assert reply is not None  # no answer is always a timeout
        return reply

    def _check_move(self, text: str, legal: Sequence[Move]) -> Move | PlayerFault:
        """The move an answer names, or why it is not an acceptable one."""
        try:
            move = self.game.parse_move(text)
        except MoveParseError:
            return ProtocolViolation(
                f"answered {quoted(text)}, which is not a move of {self.game.id}"
            )
        if move not in legal:
            return IllegalMoveFault(f"played {move}, which is not legal here")
        return move

    async def _tell_all(self, line: str) -> None:
        """Send a line that needs no answer to every player still there.

        A player that cannot take it has crashed; its next request says so, at its own step.
        """
        await asyncio.gather(
            *(self._tell(role, line) for role in range(len(self.roles)) if role not in self.out)
        )

    async def _tell(self, role: int, line: str) -> None:
        with contextlib.suppress(PlayerCrashed):
            await self.setup.players[role].send(line, SEND_LIMIT_S)

    def transcript(self) -> Transcript:
        """The record of the match so far: aborted, with no goals, unless it has ended."""
        reason, goals = self.result or (EndReason.ABORTED, None)
        seats = [
            Seat(
                role,
                player.spec.name,
                list(player.spec.command),
                str(player.log_path) if player.log_path else None,
            )
            for role, player in zip(self.roles, self.setup.players, strict=True)
        ]
        return Transcript(
            match_id=self.setup.match_id,
            game=self.game.id,
            seed=self.setup.seed,
            seats=seats,
            clocks=asdict(self.setup.clocks),
            policy=str(self.setup.policy),
            started_at=self.started_at,
            ended_at=utc_now(),
            start_times_ms=self.start_times,
            steps=self.steps,
            faults=self.faults,
            end_reason=str(reason),
            goals=goals,
        )


def new_match_id(game_id: str) -> str:
    """A fresh match id: the game, the UTC time, and four random hex digits."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{game_id}-{stamp}-{secrets.token_hex(2)}"


async def play_match(
    setup: MatchSetup, out: Path, on_step: StepCallback | None = None
) -> Transcript:
    """Play a match with started players and write its transcript, whatever happens.

    A match that is interrupted, or fails in the referee, is recorded as aborted.
    """
    match = Match(setup)
    try:
        await match.run(on_step)
    finally:
        transcript = match.transcript()
        write_transcript(out, transcript)
    return transcript


async def play_fresh(
    setup: MatchSetup, out: Path, on_step: StepCallback | None = None
) -> Transcript:
    """Start the players, play the match, and end the players whatever happens."""
    started: list[Player] = []
    try:
        for player in setup.players:
            await player.start()
            started.append(player)
        return await play_match(setup, out, on_step)
    finally:
        await asyncio.gather(*(player.close() for player in started), return_exceptions=True)
