"""A GGP player over HTTP in a seat: the referee's protocol lines turned into GGP requests.

The match speaks to every seat in the lines of `referee.protocol`; this class carries them
to a GGP player as a game manager would (`referee.ggp`): `start` becomes START with the
game's GDL rules, `go` becomes PLAY with the previous joint move, and `end` becomes STOP
after a match played out, ABORT otherwise. A GGP player expects PLAY at every step, also
when its only move is forced: the match asks it then too (`policy.asked`), and judges the
answer like any other, as GGP game managers do. Only a player out of the match, which is
asked nothing, gets its PLAY when the step's `moves` comes, its answer not judged.

In a game of imperfect information (GDL-II) PLAY and STOP carry, instead of the joint
move, the turn and the player's own last move and percepts, from the step's `sees`, as the
Dresden GGP server sent them: the player is sent nothing more than a program is.

Each request is one connection. Its time runs from the connect to the last byte of the
answer, all within the request's limit, so a player that hangs or trickles is cut off at
its deadline, and one that sends more than a reply's worth is cut off at the bound
(`referee.ggp.wire`). A refused or dropped connection is a crash; an answer that is not
HTTP, or not one term, a protocol fault; the match's clock and rules judge the rest.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from referee.clock import ABORT_S, Clocks, ggp_seconds, now
from referee.errors import PlayerCrashed, ProtocolViolation, RulesheetError
from referee.games import gdl_rules, get_game
from referee.games.gdl.check import defines_percepts
from referee.games.gdl.syntax import parse_rulesheet
from referee.ggp import messages as ggp
from referee.ggp.wire import Broken, WireError, connect, read_reply
from referee.ggp.wire import post as http_post
from referee.players.base import Player, PlayerSpec, Reply, quoted
from referee.players.trace import TraceChannel
from referee.protocol import End, EndReason, Go, Moves, Quit, Sees, Start, parse


@dataclass(frozen=True)
class Exchange:
    """One request to a GGP player and what came of it."""

    request: str  # its head: START, PLAY, STOP or ABORT
    answer: str | None  # what it answered; None when no answer came
    ms: float  # from the connect to the answer's last byte, or to the failure
    failure: str = ""  # why no answer came


class HttpPlayer(Player):
    """A GGP player at a URL, one match at a time. `heard`, when given, is told every
    request and what came of it (validate's account of what it checked)."""

    def __init__(
        self,
        spec: PlayerSpec,
        trace: TraceChannel | None = None,
        heard: Callable[[Exchange], None] | None = None,
    ) -> None:
        self.spec = spec
        self.log_path: Path | None = None
        self._trace = trace
        self._heard = heard
        self._host, self._port = spec.address
        self._match_id = ""
        self._play_s = 1.0
        # The joint move of the last step played (None before the first), and the last
        # step the player was asked to move at.
        self._last: tuple[str, ...] | None = None
        self._asked = 0
        # In a game of imperfect information: the PLAYs and STOPs sent so far in the match
        # (the next one's turn), and what the last step's `sees` told.
        self._imperfect = False
        self._turn = 0
        self._seen: tuple[str, tuple[str, ...]] | None = None

    async def start(self) -> None:
        return None

    def new_match(self) -> None:
        self._last = None
        self._asked = 0
        self._turn = 0
        self._seen = None

    async def request(self, line: str, limit_s: float) -> Reply | None:
        message = parse(line)
        if isinstance(message, Start):
            start_s, play_s = ggp_seconds(Clocks(message.start_ms, message.play_ms))
            self._match_id = ggp.plain_name(message.match_id)
            self._play_s = message.play_ms / 1000
            rules = message.rules or gdl_rules(get_game(message.game_id))
            self._imperfect = _says_percepts(rules, message.game_id)
            start = ggp.start(self._match_id, message.role, rules, start_s, play_s)
            # Judged as any answer to `start` is, by protocol.is_ready: `busy` is no `ready`.
            return await self._exchange(start, limit_s, str)
        if isinstance(message, Go):
            self._asked = message.step
            return await self._exchange(self._play(), limit_s, _move)
        raise ValueError(f"a GGP player is not asked {line!r}")

    def _play(self) -> ggp.Play:
        """The PLAY of the step to come: with the last joint move, or what it was told."""
        return ggp.Play(self._match_id, self._last, self._told())

    def _told(self) -> ggp.Seen | None:
        """What a GDL-II PLAY or STOP tells, its turn counted; None in other games."""
        if not self._imperfect:
            return None
        move, percepts = self._seen or (None, ())
        self._turn += 1
        return ggp.Seen(self._turn - 1, move, percepts)

    async def send(self, line: str, limit_s: float) -> None:
        message = parse(line)
        if isinstance(message, Moves | Sees):
            if self._asked != message.step:
                # Its move was forced: it still gets the step's PLAY, and time to think.
                await self._unjudged(self._play(), self._play_s)
            if isinstance(message, Moves):
                self._last = message.joint
            else:
                self._seen = (message.move, message.percepts)
        elif isinstance(message, End):
            if message.reason is EndReason.TERMINAL:
                stop = ggp.Stop(self._match_id, self._last, self._told())
                await self._unjudged(stop, self._play_s)
            else:
                await self._unjudged(ggp.Abort(self._match_id), ABORT_S)
        elif not isinstance(message, Quit):
            raise ValueError(f"a GGP player is not sent {line!r}")

    async def close(self) -> None:
        return None

    @property
    def alive(self) -> bool:
        # A server outlives its matches; one that is gone is found so by its next request.
        return True

    async def _unjudged(self, request: ggp.Request, limit_s: float) -> None:
        """A request whose answer is not judged: a player that fails it fails its next one."""
        with contextlib.suppress(PlayerCrashed, ProtocolViolation):
            await self._exchange(request, limit_s, str)

    async def _exchange(
        self, request: ggp.Request, limit_s: float, read: Callable[[str], str]
    ) -> Reply | None:
        """One request on its own connection: the answer, or None when none came in time."""
        text = ggp.format_request(request)
        if self._trace is not None:
            self._trace.sent(text)
        began = now()
        writer: asyncio.StreamWriter | None = None
        answer: str | None = None  # for `heard`, whatever happens
        failure = ""
        try:
            async with asyncio.timeout(limit_s):
                try:
                    reader, writer = await connect(self._host, self._port)
                except OSError as error:
                    failure = f"refused the connection: {_reason(error)}"
                    raise PlayerCrashed(failure) from None
                writer.write(http_post(f"{self._host}:{self._port}", self.spec.name, text))
                await writer.drain()
                body = answer = await read_reply(reader)
        except TimeoutError:
            failure = "no answer in time"
            if self._trace is not None:
                self._trace.received("", failure)
            return None
        except WireError as error:
            failure = error.detail
            if error.broken is Broken.CLOSED:
                raise PlayerCrashed(failure) from None
            raise ProtocolViolation(failure) from None
        except OSError as error:
            failure = f"dropped the connection: {_reason(error)}"
            raise PlayerCrashed(failure) from None
        finally:
            if writer is not None:
                writer.transport.abort()
            elapsed_ms = (now() - began) * 1000
            if self._heard is not None:
                head = type(request).__name__.upper()
                self._heard(Exchange(head, answer, elapsed_ms, failure))
        if self._trace is not None:
            self._trace.received(body)
        return Reply(read(body), elapsed_ms)


def _move(body: str) -> str:
    """The move an answer names, canonical, for the match to judge; else the answer itself,
    which the match finds is not a move."""
    try:
        return ggp.parse_move_reply(body)
    except ggp.MessageError:
        if "\n" in body or not body.strip():
            raise ProtocolViolation(f"answered {quoted(body)}, which is not one term") from None
        return body


def _says_percepts(rules: str, where: str) -> bool:
    """Whether rules sent on `start` are GDL-II's: the match has read them already."""
    try:
        return defines_percepts(parse_rulesheet(rules, where))
    except RulesheetError:
        return False


def _reason(error: OSError) -> str:
    return error.strerror or type(error).__name__
