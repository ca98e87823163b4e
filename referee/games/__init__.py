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
from referee.games.gdl import GdlGame, load_rulesheet, load_text, rulesheet_sha256
from referee.games.hex_pie import HexPie
from referee.games.quad import Quad
from referee.games.ticblock import Ticblock

GAMES: Mapping[str, Game] = MappingProxyType(
    {game.id: game for game in (BlockerParallel(), Ticblock(), HexPie(), DoubleTictactoe(), Quad())}
)


def is_rulesheet(game_id: str) -> bool:
    """Whether a game id names a GDL rulesheet file rather than a built-in game."""
    return game_id.endswith(".kif") or "/" in game_id


def get_game(game_id: str) -> Game:
    """The built-in game with this id, or the game of a `.kif` file.

    UnknownGameError listing the known ids; RulesheetError for a file that cannot be used.
    """
    if game_id in GAMES:
        return GAMES[game_id]
    if is_rulesheet(game_id):
        return load_rulesheet(game_id)
    raise UnknownGameError(game_id, tuple(GAMES))


__all__ = [
    "GAMES",
    "NOOP",
    "Game",
    "GdlGame",
    "Goals",
    "JointMove",
    "Move",
    "canonical_spelling",
    "format_move",
    "get_game",
    "is_rulesheet",
    "load_rulesheet",
    "load_text",
    "rulesheet_sha256",
]
