"""The referee loop: rules + clocks + fault policy -> transcript.

Every step: each role's legal moves; `go` to every role that has a choice, at the same time
and timed independently; each answer checked; faults handled by the policy; the joint move
applied and sent to every player. Forced moves are played for the role without asking.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import secrets
from collections.abc import Callable, Hashable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path

from referee import protocol
from referee.clock import Clocks, TimeBank
from referee.errors import (
    OUT_OF_THE_MATCH,
    IllegalMoveFault,
    MoveParseError,
    PlayerCrashed,
    PlayerFault,
    ProtocolViolation,
)
from referee.games import Game, Move
from referee.players.process import Player, Reply
from referee.protocol import EndReason
from referee.records.transcript import Fault, Seat, Step, Transcript, utc_now, write_transcript


class Policy(StrEnum):
    """What a fault costs: the match, or the move (replaced by a random legal one)."""

    FORFEIT = "forfeit"
    RANDOM = "random"


# Time a player has to take a line that needs no answer (`moves`, `end`) before it counts
# as no longer reading its input.
SEND_LIMIT_S = 5.0


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
        self.disabled = [False] * len(self.roles)
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
                await self._tell_all(protocol.moves(step, joint))
        except asyncio.CancelledError:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(
                    self._tell_all(protocol.end([0] * len(self.roles), EndReason.ABORTED)), 1.0
                )
            raise
        if forfeits:
            goals = tuple(0 if role in forfeits else 100 for role in range(len(self.roles)))
            reason = EndReason.FORFEIT
        else:
            goals = self.game.goals(state)
            reason = EndReason.TERMINAL
        self.result = reason, dict(zip(self.roles, goals, strict=True))
        await self._tell_all(protocol.end(goals, reason))
        return self.transcript()

    async def _start(self) -> set[int]:
        clocks = self.setup.clocks
        for player in self.setup.players:
            player.new_match()
        outcomes = await asyncio.gather(
            *(
                self._ask(
                    role,
                    protocol.start(
                        self.setup.match_id, self.game.id, name, clocks.start_ms, clocks.play_ms
                    ),
                    clocks.start_ms,
                )
                for role, name in enumerate(self.roles)
            )
        )
        forfeits = set()
        for role, outcome in enumerate(outcomes):
            if (
                not isinstance(outcome, PlayerFault)
                and outcome.text.strip().lower() != protocol.READY
            ):
                outcome = ProtocolViolation(f"answered {_quote(outcome.text)} instead of ready")
            if isinstance(outcome, PlayerFault):
                self._fault(0, role, outcome, ())
                # A player that did not get ready is out of step: it plays no further part.
                self.disabled[role] = True
                if self.setup.policy is Policy.FORFEIT:
                    forfeits.add(role)
            else:
                self.start_times[self.roles[role]] = round(outcome.elapsed_ms, 3)
        return forfeits

    async def _step(self, step: int, state: Hashable) -> tuple[tuple[Move, ...], set[int]]:
        legal = [self.game.legal_moves(state, role) for role in range(len(self.roles))]
        joint: list[Move] = [moves[0] for moves in legal]
        choosing = [role for role, moves in enumerate(legal) if len(moves) > 1]
        for role in choosing:
            if self.disabled[role]:
                joint[role] = self.rng.choice(legal[role])
        asked = [role for role in choosing if not self.disabled[role]]
        play_ms = self.setup.clocks.play_ms
        outcomes = await asyncio.gather(
            *(
                self._ask(
                    role, protocol.go(step, self.banks[role].allowance_ms(play_ms), legal[role])
                )
                for role in asked
            )
        )
        times: dict[str, float] = {}
        forfeits: set[int] = set()
        for role, outcome in zip(asked, outcomes, strict=True):
            if not isinstance(outcome, PlayerFault):
                times[self.roles[role]] = round(outcome.elapsed_ms, 3)
                outcome = self._check_move(outcome.text, legal[role])
            if isinstance(outcome, PlayerFault):
                replacement = self._fault(step, role, outcome, legal[role])
                if replacement is None:
                    forfeits.add(role)
                else:
                    joint[role] = replacement
            else:
                joint[role] = outcome
        if not forfeits:
            self.steps.append(Step(step, dict(zip(self.roles, joint, strict=True)), times))
        return tuple(joint), forfeits

    async def _ask(self, role: int, line: str, start_ms: int | None = None) -> Reply | PlayerFault:
        """One request: `start` timed by the start clock, or `go` by the play clock and bank."""
        bank = self.banks[role]
        play_ms = self.setup.clocks.play_ms
        limit_ms = start_ms if start_ms is not None else bank.allowance_ms(play_ms)
        try:
            reply = await self.setup.players[role].request(line, limit_ms / 1000)
        except PlayerFault as fault:
            return fault
        if start_ms is None:
            bank.charge(play_ms, reply.elapsed_ms)
        return reply

    def _check_move(self, text: str, legal: Sequence[Move]) -> Move | PlayerFault:
        """The move an answer names, or why it is not an acceptable one."""
        try:
            move = self.game.parse_move(text)
        except MoveParseError:
            return ProtocolViolation(
                f"answered {_quote(text)}, which is not a move of {self.game.id}"
            )
        if move not in legal:
            return IllegalMoveFault(f"played {move}, which is not legal here")
        return move

    def _fault(
        self, step: int, role: int, fault: PlayerFault, legal: Sequence[Move]
    ) -> Move | None:
        """Record a fault; the random move that replaces the answer, or None when there is none."""
        if fault.kind in OUT_OF_THE_MATCH:
            self.disabled[role] = True
        replacement = None
        if self.setup.policy is Policy.RANDOM and legal:
            replacement = self.rng.choice(legal)
        self.faults.append(Fault(step, self.roles[role], fault.kind, fault.detail, replacement))
        return replacement

    async def _tell_all(self, line: str) -> None:
        """Send a line that needs no answer to every player still there.

        A player that cannot take it has crashed; its next request says so, at its own step.
        """
        await asyncio.gather(
            *(self._tell(role, line) for role in range(len(self.roles)) if not self.disabled[role])
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
                list(player.spec.argv),
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


def _quote(text: str, limit: int = 80) -> str:
    shown = text if len(text) <= limit else text[:limit] + "..."
    return repr(shown)


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
