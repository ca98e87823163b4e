"""A line-protocol program entered as a GGP player: `referee serve`.

The gateway is an HTTP server that GGP game managers POST their messages to (`referee.ggp`).
For each match it starts the program afresh in the sandbox and speaks to it in the lines of
`referee.protocol`, keeping the game's state with the referee's own rules: START becomes
`start` (a built-in game by its id when the rules are its rules, else the rules on the
line), PLAY becomes `moves` and then `go` with the legal moves when the program has a
choice, STOP and ABORT become `end`. A forced move is answered by the gateway itself.
Every move is answered as the manager's rulesheet spells it: GDL is read in lower case,
but a manager matches moves case and all (ggp-base's do).

The gateway keeps a margin of each clock for itself, so that its answer reaches the manager
in time even when the program uses its whole clock; a program that does not answer a `go`
in time, or answers with no legal move, is covered by a random legal move, and told so in
the gateway's output. One match at a time: a second START is answered `busy`, and so is
a PLAY, STOP or ABORT of a match not played here, as ggp-base's players answer it (a
manager reads any other answer to PLAY as a move).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from pathlib import Path

from referee.clock import GATEWAY_MARGIN_MS, GATEWAY_READ_S, abandoned_after_s, now
from referee.computing import computed
from referee.errors import GameFault, MoveError, PlayerFault, RefereeError
from referee.games import Game, Move, StateLimits, builtin_with_rules, load_text
from referee.games.beliefs import Beliefs, likeliest, narrowed, offered, where_over
from referee.games.gdl.limits import DEFAULT_LIMITS
from referee.games.gdl.syntax import one_line, respell, spellings
from referee.ggp import messages as ggp
from referee.ggp import wire
from referee.ggp.door import Door
from referee.pauses import between_matches
from referee.players.base import PlayerSpec
from referee.players.process import ProgramPlayer
from referee.players.trace import TraceChannel
from referee.protocol import End, EndReason, Go, Moves, Sees, Start, is_ready, start_rules


class GatewayError(RefereeError):
    """A request the gateway cannot act on, said to the manager as `400 Bad Request`."""


@dataclass
class _Hosted:
    """The match the program is playing: its game, its role, where it stands."""

    match_id: str
    game: Game
    role: int
    play_ms: int
    player: ProgramPlayer
    # The manager's spelling of the rulesheet's names, by their lower case.
    spelling: dict[str, str]
    state: Hashable
    step: int = 0
    last_heard: float = field(default_factory=now)
    # In a game of imperfect information, whose manager tells only the player's own move
    # and percepts: the states it may be in, instead of `state`.
    beliefs: Beliefs | None = None


class Gateway:
    """Answers a GGP manager's requests for one line-protocol program."""

    def __init__(
        self,
        spec: PlayerSpec,
        name: str,
        logs: Path,
        say: Callable[[str], None],
        trace: TraceChannel | None = None,
        states: StateLimits = DEFAULT_LIMITS,
        door: Door | None = None,
    ) -> None:
        self.spec = spec
        self.states = states
        # Who may connect, and how many at once (every address, by default).
        self.door = door or Door()
        self.name = name
        self.logs = logs
        self.say = say
        self.trace = trace
        self.rng = random.Random()
        self.hosted: _Hosted | None = None
        self._starting = False
        self._lock = asyncio.Lock()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One connection: one request read within bounds, one answer, then the close; one
        the door refuses is closed at once, nothing it sent read."""
        peer = writer.get_extra_info("peername")
        address = str(peer[0]) if peer else ""
        if self.door.enter(address) is not None:
            writer.transport.abort()
            return
        try:
            try:
                async with asyncio.timeout(GATEWAY_READ_S):
                    incoming = await wire.read_request(reader)
            except (TimeoutError, wire.WireError) as error:
                detail = str(error) or f"no whole request within {GATEWAY_READ_S:.0f} s"
                writer.write(wire.reply(detail, "400 Bad Request"))
                return
            if incoming.method == "OPTIONS":
                writer.write(wire.reply(""))
                return
            try:
                answer = await self.answer(ggp.parse_request(incoming.message))
            except (ggp.MessageError, RefereeError) as error:
                # A request it cannot act on, or a fault of the rules the manager sent.
                self.say(f"refused a request: {error}")
                writer.write(wire.reply(str(error), "400 Bad Request"))
                return
            except Exception as error:
                # A server outlives any one request: a bug of ours that one meets is told to
                # its client and said in a line naming the address, and serving goes on.
                self.say(f"failed on a request from {address}: {type(error).__name__}: {error}")
                writer.write(wire.reply("internal error", "500 Internal Server Error"))
                return
            writer.write(wire.reply(answer))
        finally:
            with contextlib.suppress(OSError, TimeoutError):
                async with asyncio.timeout(GATEWAY_READ_S):
                    await writer.drain()
            writer.close()
            self.door.leave(address)

    async def answer(self, request: ggp.Request) -> str:
        """What the player says to a request."""
        await self._drop_if_abandoned()
        match request:
            case ggp.Info():
                busy = self.hosted is not None or self._starting
                return ggp.format_info(self.name, ggp.Status.BUSY if busy else ggp.Status.AVAILABLE)
            case ggp.Preview():
                return "ready"
            case ggp.Start():
                if self.hosted is not None or self._starting:
                    return "busy"
                self._starting = True
                try:
                    return await self._start(request)
                finally:
                    self._starting = False
            case ggp.Play(match_id, moves, seen):
                async with self._lock:
                    hosted = self._match(match_id)
                    if hosted is None:
                        return "busy"
                    try:
                        return await self._play(hosted, moves, seen)
                    except GameFault as fault:
                        # No state, so no random legal move either: the match is over here.
                        await self._rules_failed(hosted, fault)
                        return "busy"
            case ggp.Stop(match_id, moves, seen):
                async with self._lock:
                    hosted = self._match(match_id)
                    if hosted is None:
                        return "busy"
                    try:
                        await self._follow(hosted, moves, seen)
                        if hosted.beliefs is not None:
                            # Told the end, the player learns that the game is over.
                            game = hosted.game
                            over = await computed(game, where_over, game, hosted.beliefs, True)
                            hosted.beliefs = over or hosted.beliefs
                        end = await self._game_end(hosted)
                    except GameFault as fault:
                        await self._rules_failed(hosted, fault)
                        return "done"
                    if end is None:
                        # Goals are the rules' only in a terminal state: a match stopped
                        # before its end has none.
                        self.say(f"{match_id}: stopped at state {hosted.step}, before its end")
                        end = _aborted(hosted)
                    await self._end(hosted, end)
                    return "done"
            case ggp.Abort(match_id):
                async with self._lock:
                    hosted = self._match(match_id)
                    if hosted is None:
                        return "busy"
                    await self._end(hosted, _aborted(hosted))
                    return "aborted"

    async def close(self) -> None:
        """End the program of a match still under way."""
        if self.hosted is not None:
            hosted, self.hosted = self.hosted, None
            await hosted.player.close()

    async def _start(self, request: ggp.Start) -> str:
        began = now()
        deadline_ms = request.start_clock_s * 1000 - GATEWAY_MARGIN_MS
        try:
            game = await _game_of(request, self.states)
        except RefereeError as error:
            self.say(f"{request.match_id}: cannot play these rules: {error}")
            return "busy"
        try:
            role = game.role_index(request.role)
        except RefereeError as error:
            self.say(f"{request.match_id}: {error}")
            return "busy"
        # The manager's match id names the log: never a path out of the logs' directory.
        log = self.logs / f"{ggp.plain_name(request.match_id)}.log"
        player = ProgramPlayer(self.spec, log, trace=self.trace)
        try:
            await player.start()
            player.new_match()
            left_ms = max(1, round(deadline_ms - (now() - began) * 1000))
            play_ms = max(1, request.play_clock_s * 1000 - GATEWAY_MARGIN_MS)
            line = Start(
                request.match_id, game.id, request.role, left_ms, play_ms, start_rules(game)
            )
            reply = await player.request(str(line), left_ms / 1000)
        except (RefereeError, PlayerFault) as error:
            self.say(f"{request.match_id}: the program did not start: {error}")
            await player.close()
            return "busy"
        if reply is None or not is_ready(reply.text):
            said = "nothing in time" if reply is None else repr(reply.text[:80])
            self.say(f"{request.match_id}: the program answered {said} instead of ready")
            await player.close()
            return "busy"
        self.hosted = _Hosted(
            request.match_id,
            game,
            role,
            play_ms,
            player,
            spellings(request.rules),
            game.initial_state(),
            beliefs={game.initial_state(): 1.0} if game.imperfect else None,
        )
        self.say(f"{request.match_id}: started, {game.id} as {request.role}")
        return "ready"

    async def _play(
        self, hosted: _Hosted, moves: tuple[str, ...] | None, seen: ggp.Seen | None
    ) -> str:
        await self._follow(hosted, moves, seen)
        end = await self._game_end(hosted)
        if end is not None:
            # No move exists: the match ends here as the game does, and the manager, which
            # should have sent STOP, is told that its request cannot be answered.
            await self._end(hosted, end)
            raise GatewayError(
                f"{hosted.match_id}: the game is over at state {hosted.step}, so there is no"
                " move to play; the match has ended here with its goals"
            )
        game = hosted.game
        if hosted.beliefs is not None:
            # Asked to move, the player learns that the game goes on.
            hosted.beliefs = await computed(game, where_over, game, hosted.beliefs, False)
            legal = await computed(game, offered, game, hosted.beliefs, hosted.role)
            if not legal:
                raise GatewayError(
                    f"{hosted.match_id}: no move is legal for {game.roles[hosted.role]} in"
                    f" every state it may be in after step {hosted.step}"
                )
        else:
            legal = await computed(game, game.legal_moves, hosted.state, hosted.role)
        return respell(await self._choose(hosted, legal), hosted.spelling)

    async def _follow(
        self, hosted: _Hosted, moves: tuple[str, ...] | None, seen: ggp.Seen | None
    ) -> None:
        """Take what a PLAY or STOP says of the step before it, in the form its game's:
        the joint move, or in a game of imperfect information the player's own."""
        if (seen is not None) != (hosted.beliefs is not None):
            form = "GDL-II's (turn, last move, percepts)" if seen is None else "the joint move"
            raise GatewayError(
                f"{hosted.match_id}: {hosted.game.id} is told with {form}, not as sent"
            )
        if seen is not None and seen.move is not None:
            await self._observe(hosted, seen.move, seen.percepts)
        elif moves is not None:
            await self._apply(hosted, moves)

    async def _observe(self, hosted: _Hosted, move: str, percepts: tuple[str, ...]) -> None:
        """Take the player's own move and percepts, and tell the program."""
        game, beliefs = hosted.game, hosted.beliefs
        assert beliefs is not None
        try:
            own = game.parse_move(move)
        except MoveError as error:
            raise GatewayError(str(error)) from None
        following = await computed(game, narrowed, game, beliefs, hosted.role, own, percepts)
        if not following:
            raise GatewayError(
                f"{own} and {' '.join(percepts) or 'no percept'} agree with no state the rules"
                f" allow after step {hosted.step}"
            )
        hosted.beliefs = following
        hosted.step += 1
        with contextlib.suppress(PlayerFault):
            told = Sees(hosted.step, own, tuple(sorted(percepts)))
            await hosted.player.send(str(told), hosted.play_ms / 1000)

    async def _choose(self, hosted: _Hosted, legal: tuple[Move, ...]) -> Move:
        """The program's move among `legal`, or a random one when it has none; a forced
        move without asking it."""
        if len(legal) == 1:
            return legal[0]
        step = hosted.step + 1
        try:
            reply = await hosted.player.request(
                str(Go(step, hosted.play_ms, legal)), hosted.play_ms / 1000
            )
            move = None if reply is None else hosted.game.parse_move(reply.text)
        except (PlayerFault, MoveError) as error:
            self.say(f"{hosted.match_id}: step {step}: {error}")
            move = None
        if move is None or move not in legal:
            move = self.rng.choice(legal)
            self.say(f"{hosted.match_id}: step {step}: no legal move in time; played {move}")
        return move

    async def _apply(self, hosted: _Hosted, texts: tuple[str, ...]) -> None:
        """Play the manager's joint move, and tell the program."""
        game = hosted.game
        if len(texts) != len(game.roles):
            raise GatewayError(f"{len(texts)} moves for {len(game.roles)} roles")
        try:
            joint: tuple[Move, ...] = tuple(game.parse_move(text) for text in texts)
        except MoveError as error:
            raise GatewayError(str(error)) from None
        for role, move in enumerate(joint):
            if move not in await computed(game, game.legal_moves, hosted.state, role):
                raise GatewayError(f"{move} is not legal for {game.roles[role]} here")
        hosted.step += 1
        hosted.state = await computed(game, game.next_state, hosted.state, joint)
        with contextlib.suppress(PlayerFault):
            await hosted.player.send(str(Moves(hosted.step, joint)), hosted.play_ms / 1000)

    async def _game_end(self, hosted: _Hosted) -> End | None:
        """The game's end, with its goals, when the state is terminal; else None. In a game
        of imperfect information, when every state it may be in is: with the goals of the
        likeliest, all it can know of them."""
        game = hosted.game
        if hosted.beliefs is not None:
            over = await computed(game, where_over, game, hosted.beliefs, True)
            if len(over) < len(hosted.beliefs):
                return None
            state = likeliest(over)
        else:
            state = hosted.state
            if not await computed(game, game.is_terminal, state):
                return None
        return End(tuple(await computed(game, game.goals, state)), EndReason.TERMINAL)

    async def _rules_failed(self, hosted: _Hosted, fault: GameFault) -> None:
        """A state the rules cannot compute: the match ends on this side, and is told so."""
        self.say(
            f"{hosted.match_id}: the rules fail at state {hosted.step}: {fault};"
            " the match ends here, on the program's side"
        )
        await self._end(hosted, _aborted(hosted))

    async def _end(self, hosted: _Hosted, end: End) -> None:
        with contextlib.suppress(PlayerFault):
            await hosted.player.send(str(end), hosted.play_ms / 1000)
        self.hosted = None
        await hosted.player.close()
        hosted.game.close()
        between_matches()
        # An aborted match has no goals: its `end` line's zeros are the protocol's filler.
        goals = (
            f", goals {' '.join(map(str, end.goals))}" if end.reason is EndReason.TERMINAL else ""
        )
        self.say(f"{hosted.match_id}: {end.reason}{goals}")

    def _match(self, match_id: str) -> _Hosted | None:
        """The match of this id, if it is the one played here."""
        hosted = self.hosted
        if hosted is None or hosted.match_id != match_id:
            self.say(f"{match_id}: not a match played here; answered busy")
            return None
        hosted.last_heard = now()
        return hosted

    async def _drop_if_abandoned(self) -> None:
        """A manager that went silent mid-match must not keep the player busy for ever."""
        hosted = self.hosted
        if hosted is None or now() - hosted.last_heard <= abandoned_after_s(hosted.play_ms):
            return
        async with self._lock:
            # Another request may have ended it while this one waited, and a new match may
            # be under way: only the match found abandoned is ended, and only once.
            if self.hosted is not hosted:
                return
            self.say(f"{hosted.match_id}: abandoned by its manager")
            await self._end(hosted, _aborted(hosted))


def _aborted(hosted: _Hosted) -> End:
    """The `end` of a match ended before the game's end: no goals, said as zeros."""
    return End((0,) * len(hosted.game.roles), EndReason.ABORTED)


async def _game_of(start: ggp.Start, states: StateLimits) -> Game:
    """The game of a START: a built-in game when the rules are its rules, else the rules',
    each of its states computed within `states`."""
    builtin = builtin_with_rules(one_line(start.rules))
    if builtin is not None:
        return builtin
    # Grounding can take seconds: the gateway goes on answering INFO meanwhile.
    where = f"{ggp.plain_name(start.match_id)}.kif"
    return await asyncio.to_thread(load_text, start.rules, where, states)


async def serve(gateway: Gateway, host: str, port: int) -> asyncio.Server:
    """Listen for a manager's requests at host:port."""
    return await wire.serve(gateway.handle, host, port)
