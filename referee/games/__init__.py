"""The rule engines, and the registry that maps game ids to them."""

from collections.abc import Mapping
from types import MappingProxyType

from referee.errors import UnknownGameError
from referee.games.base import (
    NOOP,
    Game,
    Goals,
    JointMove,
    Move,
    canonical_spelling,
    format_move,
)
from referee.games.blocker_parallel import BlockerParallel
from referee.games.double_tictactoe import DoubleTictactoe
from referee.games.hex_pie import HexPie
from referee.games.quad import Quad
from referee.games.ticblock import Ticblock

GAMES: Mapping[str, Game] = MappingProxyType(
    {game.id: game for game in (BlockerParallel(), Ticblock(), HexPie(), DoubleTictactoe(), Quad())}
)


def get_game(game_id: str) -> Game:
    """The game with this id, or UnknownGameError listing the known ids."""
    try:
        return GAMES[game_id]
    except KeyError:
        raise UnknownGameError(game_id, tuple(GAMES)) from None


__all__ = [
    "GAMES",
    "NOOP",
    "Game",
    "Goals",
    "JointMove",
    "Move",
    "canonical_spelling",
    "format_move",
    "get_game",
]
