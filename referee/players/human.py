"""A person at the terminal as a player: the board, the legal moves, and a checked prompt.

It reads the referee's lines like any program, through the protocol module, keeping its own
copy of the state from the `start` and `moves` lines. People are not timed: the clocks bind
programs only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable

from referee.clock import now
from referee.errors import MoveError, PlayerCrashed
from referee.games import Game, get_game
from referee.players.base import Player, PlayerSpec, Reply
from referee.protocol import READY, End, Go, Moves, Start, parse


class HumanPlayer(Player):
    """Asks a person for each move through `read` (a prompt in, a line out) and `show`."""

    def __init__(self, read: Callable[[str], str], show: Callable[[str], None]) -> None:
        self.spec = PlayerSpec.human()
        self.log_path = None
        self._read = read
        self._show = show
        self._game: Game | None = None
        self._state: Hashable = None
        self._role = 0
        self._left = False

    @property
    def alive(self) -> bool:
        return not self._left

    async def start(self) -> None:
        return None

    def new_match(self) -> None:
        return None

    async def request(self, line: str, limit_s: float) -> Reply | None:
        began = now()
        message = parse(line)
        if isinstance(message, Start):
            self._game = get_game(message.game_id)
            self._role = self._game.role_index(message.role)
            self._state = self._game.initial_state()
            self._show(
                f"You play {message.role} in {self._game.id};"
                f" `referee rules {self._game.id}` explains it."
            )
            return Reply(READY, 0.0)
        assert self._game is not None and isinstance(message, Go)
        self._show(self._game.render(self._state))
        self._show(f"Step {message.step}, your legal moves: {' '.join(message.legal)}")
        while True:
            try:
                text = await asyncio.to_thread(self._read, f"{self._game.roles[self._role]}> ")
            except EOFError:
                self._left = True
                raise PlayerCrashed("the person at the terminal left") from None
            try:
                move = self._game.parse_move(text)
            except MoveError as error:
                self._show(f"{error}; try again")
                continue
            if move in message.legal:
                return Reply(move, (now() - began) * 1000)
            self._show(f"{move} is not legal now; try again")

    async def send(self, line: str, limit_s: float) -> None:
        message = parse(line)
        if self._game is None:
            return
        if isinstance(message, Moves):
            joint = tuple(self._game.parse_move(move) for move in message.joint)
            self._state = self._game.next_state(self._state, joint)
            played = ", ".join(f"{r} {m}" for r, m in zip(self._game.roles, joint, strict=True))
            self._show(f"step {message.step}: {played}")
        elif isinstance(message, End):
            self._show(self._game.render(self._state))

    async def close(self) -> None:
        self._left = True
