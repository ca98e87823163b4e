"""The rule engines, and the registry that maps game ids to them.

The command line names the games in its help and completes their ids on every Tab, so this
package imports no engine and no reasoner until one is asked for: `GAMES` knows the ids and
where each engine lives, and the names below come from their modules when first used.
"""

from __future__ import annotations

import difflib
import functools
import importlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from referee.errors import UnknownGameError
from referee.games.gdl.limits import DEFAULT_LIMITS, StateLimits

if TYPE_CHECKING:
    from referee.games.base import (
        NOOP,
        Game,
        Goals,
        JointMove,
        Move,
        canonical_spelling,
        format_move,
    )
    from referee.games.gdl.game import GdlGame, load_rulesheet, load_text, rulesheet_sha256

# The names this package gives, and the module each is defined in.
_HOMES = {
    **dict.fromkeys(
        ("NOOP", "Game", "Goals", "JointMove", "Move", "canonical_spelling", "format_move"),
        "referee.games.base",
    ),
    **dict.fromkeys(
        ("GdlGame", "load_rulesheet", "load_text", "rulesheet_sha256"), "referee.games.gdl.game"
    ),
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)


# The built-in games in the order they are listed: id, and the module and class of the
# engine. tests/test_games_registry.py checks each engine's own id against its key.
_ENGINES = {
    "blocker-parallel": ("referee.games.blocker_parallel", "BlockerParallel"),
    "ticblock": ("referee.games.ticblock", "Ticblock"),
    "hex-pie": ("referee.games.hex_pie", "HexPie"),
    "double-tictactoe": ("referee.games.double_tictactoe", "DoubleTictactoe"),
    "quad": ("referee.games.quad", "Quad"),
}


@functools.cache
def _engine(game_id: str) -> Game:
    """The one engine of a built-in game, made on first use."""
    module, name = _ENGINES[game_id]
    engine: Game = getattr(importlib.import_module(module), name)()
    return engine


class _Registry(Mapping[str, "Game"]):
    """The built-in games by id, read-only; an engine is imported when it is first looked up."""

    def __getitem__(self, game_id: str) -> Game:
        if game_id not in _ENGINES:
            raise KeyError(game_id)
        return _engine(game_id)

    def __iter__(self) -> Iterator[str]:
        return iter(_ENGINES)

    def __len__(self) -> int:
        return len(_ENGINES)

    def __contains__(self, game_id: object) -> bool:
        return game_id in _ENGINES


GAMES: Mapping[str, Game] = _Registry()


# GDL rulesheets of the built-in games, written for the referee and checked against the
# engines by `referee conformance`: the rules a GGP player is sent, and a record's states.
RULESHEETS = Path(__file__).resolve().parent / "rulesheets"


def gdl_rules(game: Game) -> str:
    """A game's GDL rulesheet: a GDL game's own, or the package's for a built-in game."""
    from referee.games.gdl.game import GdlGame

    if isinstance(game, GdlGame):
        return game.rules
    return (RULESHEETS / f"{game.id}.kif").read_text(encoding="utf-8")


def as_gdl(game: Game) -> GdlGame:
    """The game under its GDL rules: itself, or the package's rulesheet of a built-in game."""
    from referee.games.gdl.game import GdlGame, load_text

    if isinstance(game, GdlGame):
        return game
    return load_text(gdl_rules(game), str(RULESHEETS / f"{game.id}.kif"))


def builtin_with_rules(rules: str) -> Game | None:
    """The built-in game whose GDL rulesheet is `rules` (canonical, on one line), if any."""
    from referee.games.gdl.syntax import one_line

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
        from referee.games.gdl.game import load_rulesheet

        return load_rulesheet(game_id, limits)
    raise UnknownGameError(game_id, tuple(GAMES), nearest_game(game_id, Path()))


# Where a rulesheet named by its bare name is looked for, under the folder paths are read
# from: the folder itself, and where a clone keeps its example rulesheets.
_RULESHEET_FOLDERS = (Path(), Path("rulesheets"), Path("matches", "rulesheets"))
# The example rulesheets of the clone the package runs from (an editable install), wherever
# the command is typed.
_CLONE_RULESHEETS = RULESHEETS.parents[2] / "matches" / "rulesheets"


def shipped_rulesheets() -> list[Path]:
    """The GDL rulesheets that come with the referee and are no built-in game's: the
    package's (GDL-II examples), and the clone's examples where it runs from a clone."""
    found = [path for path in sorted(RULESHEETS.glob("*.kif")) if path.stem not in GAMES]
    return found + sorted(_CLONE_RULESHEETS.glob("*.kif"))


def nearest_game(game_id: str, base: Path) -> str | None:
    """What a game id that is not one was likely meant to be: the path of a rulesheet of
    that name (`tictactoe`: matches/rulesheets/tictactoe.kif), relative to `base` where it is
    under it, else the built-in game whose id is nearest (`hexpie`: hex-pie), else None."""
    stem = game_id.lower().removesuffix(".kif")
    places = [base / folder for folder in _RULESHEET_FOLDERS]
    for file in [path for place in places for path in _kif_files(place)] + shipped_rulesheets():
        if file.stem.lower() == stem and file.is_file():
            return shown_path(file, base)
    close = difflib.get_close_matches(game_id.lower(), list(GAMES), n=1)
    return close[0] if close else None


def _kif_files(folder: Path) -> list[Path]:
    try:
        return sorted(folder.glob("*.kif"))
    except OSError:
        return []


def shown_path(file: Path, base: Path = Path()) -> str:
    """A file's path as the user would type it from `base`: relative where it is under it."""
    try:
        return str(file.resolve().relative_to(base.resolve()))
    except ValueError:
        return str(file.resolve())


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
    "shipped_rulesheets",
    "shown_path",
]
