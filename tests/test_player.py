"""Player specs and the protocol's lines."""

from __future__ import annotations

import pytest

from referee import protocol
from referee.clock import Clocks, TimeBank
from referee.errors import ConfigError
from referee.players.process import PlayerSpec


def test_a_shell_style_command_is_split_not_run_through_a_shell() -> None:
    spec = PlayerSpec.from_command("bot", "python3 'my bot.py' --depth 3 > out")
    assert spec.argv == ("python3", "my bot.py", "--depth", "3", ">", "out")


@pytest.mark.parametrize(("command", "message"), [("", "empty command"), ("'open", "cannot split")])
def test_bad_commands(command: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        PlayerSpec.from_command("bot", command)


def test_protocol_lines() -> None:
    assert (
        protocol.start("m-1", "ticblock", "xcplayer", 10000, 1000)
        == "start m-1 ticblock xcplayer 10000 1000"
    )
    assert protocol.go(3, 900, ["(mark 1 1)", "noop"]) == "go 3 900 (mark 1 1) noop"
    assert protocol.moves(3, ["(mark 1 1)", "noop"]) == "moves 3 (mark 1 1) noop"
    assert protocol.end([75, 25], protocol.EndReason.TERMINAL) == "end 75 25 terminal"
    assert protocol.split_moves("(mark 1 1) noop (place e 5) swap") == [
        "(mark 1 1)",
        "noop",
        "(place e 5)",
        "swap",
    ]


def test_time_bank_pays_overruns_until_it_is_empty() -> None:
    bank = TimeBank(300)
    assert bank.allowance_ms(1000) == 1300
    assert bank.charge(1000, 900)
    assert bank.remaining_ms == 300
    assert bank.charge(1000, 1200.2)
    assert bank.remaining_ms == 99
    assert not bank.charge(1000, 1100)
    assert bank.charge(1000, 1099)
    assert bank.remaining_ms == 0


@pytest.mark.parametrize(
    ("clocks", "message"),
    [((0, 1000, 0), "start clock"), ((1000, -5, 0), "play clock"), ((1000, 1000, -1), "time bank")],
)
def test_clocks_must_be_positive(clocks: tuple[int, int, int], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Clocks(*clocks)
