"""The registry of built-in games: the ids it lists without importing an engine are the
engines' own, in the order the games are listed, and each engine is made once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from referee.errors import UnknownGameError
from referee.games import GAMES, get_game, nearest_game
from referee.games.base import Game


def test_each_id_is_its_engines_own() -> None:
    for game_id, game in GAMES.items():
        assert isinstance(game, Game)
        assert game.id == game_id


def test_the_games_are_listed_in_the_order_of_the_rules() -> None:
    assert list(GAMES) == ["blocker-parallel", "ticblock", "hex-pie", "double-tictactoe", "quad"]
    assert len(GAMES) == 5


def test_an_engine_is_made_once() -> None:
    assert GAMES["quad"] is GAMES["quad"] is get_game("quad")


def test_an_unknown_id_is_not_a_game() -> None:
    assert "chess" not in GAMES and 3 not in GAMES
    with pytest.raises(KeyError):
        GAMES["chess"]
    with pytest.raises(UnknownGameError, match="hex-pie"):
        get_game("hexpie")
    assert nearest_game("Ticblok", Path("/nonexistent")) == "ticblock"


def test_the_registry_imports_no_engine_until_one_is_asked_for() -> None:
    script = (
        "import sys\n"
        "from referee.games import GAMES, StateLimits\n"
        "names = list(GAMES); StateLimits()\n"
        "print(sorted(m for m in sys.modules if m.startswith('referee.games.')))\n"
        "GAMES['ticblock']\n"
        "print('referee.games.ticblock' in sys.modules, 'referee.games.quad' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out == ["['referee.games.gdl', 'referee.games.gdl.limits']", "True False"]
