"""The rule engines, and the registry that maps game ids to them."""

import difflib
from collections.abc import Mapping
from pathlib import Path
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
from referee.games.gdl import GdlGame, StateLimits, load_rulesheet, load_text, rulesheet_sha256
from referee.games.gdl.remote import DEFAULT_LIMITS
from referee.games.gdl.syntax import one_line
from referee.games.hex_pie import HexPie
from referee.games.quad import Quad
from referee.games.ticblock import Ticblock

GAMES: Mapping[str, Game] = MappingProxyType(
    {game.id: game for game in (BlockerParallel(), Ticblock(), HexPie(), DoubleTictactoe(), Quad())}
)


# GDL rulesheets of the built-in games, written for the referee and checked against the
# engines by `referee conformance`: the rules a GGP player is sent, and a record's states.
RULESHEETS = Path(__file__).resolve().parent / "rulesheets"


def gdl_rules(game: Game) -> str:
    """A game's GDL rulesheet: a GDL game's own, or the package's for a built-in game."""
    if isinstance(game, GdlGame):
        return game.rules
    return (RULESHEETS / f"{game.id}.kif").read_text(encoding="utf-8")


def as_gdl(game: Game) -> GdlGame:
    """The game under its GDL rules: itself, or the package's rulesheet of a built-in game."""
    if isinstance(game, GdlGame):
        return game
    return load_text(gdl_rules(game), str(RULESHEETS / f"{game.id}.kif"))


def builtin_with_rules(rules: str) -> Game | None:
    """The built-in game whose GDL rulesheet is `rules` (canonical, on one line), if any."""
    for game in GAMES.values():
        if one_line(gdl_rules(game)) == rules:
            return game
    return None


def is_rulesheet(game_id: str) -> bool:
    """Whether a game id names a GDL rulesheet file rather than a built-in game."""
    return game_id.endswith(".kif") or "/" in game_id


def get_game(game_id: str, limits: StateLimits = DEFAULT_LIMITS) -> Game:
    """The built-in game with this id, or the game of a `.kif` file, its states computed
    within `limits`.

    UnknownGameError listing the known ids; RulesheetError for a file that cannot be used.
    """
    if game_id in GAMES:
        return GAMES[game_id]
    if is_rulesheet(game_id):
        return load_rulesheet(game_id, limits)
    raise UnknownGameError(game_id, tuple(GAMES), nearest_game(game_id))


def nearest_game(game_id: str) -> str | None:
    """The built-in game whose id is nearest a mistyped one (`hexpie`: hex-pie), if one is."""
    close = difflib.get_close_matches(game_id.lower(), list(GAMES), n=1)
    return close[0] if close else None


__all__ = [
    "GAMES",
    "NOOP",
    "RULESHEETS",
    "Game",
    "GdlGame",
    "Goals",
    "JointMove",
    "Move",
    "StateLimits",
    "as_gdl",
    "builtin_with_rules",
    "canonical_spelling",
    "format_move",
    "gdl_rules",
    "get_game",
    "is_rulesheet",
    "load_rulesheet",
    "load_text",
    "nearest_game",
    "rulesheet_sha256",
]
