"""A person at the terminal as a player: the board, the legal moves, and a checked prompt.

It speaks the protocol like any program, keeping its own copy of the state from the `start`
and `moves` lines. People are not timed: the clocks bind programs only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable

from referee import protocol
from referee.clock import now
from referee.errors import MoveError, PlayerCrashed
from referee.games import Game, get_game
from referee.players.process import Player, PlayerSpec, Reply


class HumanPlayer(Player):
    """Asks a person for each move through `read` (a prompt in, a line out) and `show`."""

    def __init__(self, read: Callable[[str], str], show: Callable[[str], None]) -> None:
        self.spec = PlayerSpec("human", ("human",))
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

    async def request(self, line: str, limit_s: float) -> Reply:
        began = now()
        words = line.split()
        if words[0] == "start":
            self._game = get_game(words[2])
            self._role = self._game.roles.index(words[3])
            self._state = self._game.initial_state()
            self._show(
                f"You play {words[3]} in {self._game.id}; `referee rules {words[2]}` explains it."
            )
            return Reply(protocol.READY, 0.0)
        assert self._game is not None and words[0] == "go"
        legal = protocol.split_moves(line.split(maxsplit=3)[3])
        self._show(self._game.render(self._state))
        self._show(f"Step {words[1]}, your legal moves: {' '.join(legal)}")
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
            if move in legal:
                return Reply(move, (now() - began) * 1000)
            self._show(f"{move} is not legal now; try again")

    async def send(self, line: str, limit_s: float) -> None:
        words = line.split()
        if self._game is None or not words:
            return
        if words[0] == "moves":
            joint = tuple(protocol.split_moves(line.split(maxsplit=2)[2]))
            self._state = self._game.next_state(self._state, joint)
            played = ", ".join(f"{r} {m}" for r, m in zip(self._game.roles, joint, strict=True))
            self._show(f"step {words[1]}: {played}")
        elif words[0] == "end":
            self._show(self._game.render(self._state))

    async def close(self) -> None:
        self._left = True
