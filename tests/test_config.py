"""Tournament configs: every kind of error is one line with file, line and key, exit 2."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from referee.arena.store.config import parse_arena_config
from referee.cli import app
from referee.clock import Clocks
from referee.errors import ConfigError
from referee.policy import Policy
from referee.sandbox.limits import Limits
from referee.tournaments.config import load_config
from referee.tournaments.host import MatchOrder
from referee.tournaments.schedule import schedule as schedule_of

runner = CliRunner()
PLAYERS = f"""\
players:
  - name: alpha
    command: random
  - name: beta
    command: [{sys.executable}, -c, "pass"]
"""

# (config text, line, what the message must say after "file:line: ")
ERRORS = {
    "sprt without settings": (
        "name: t\ngames: [quad]\nformat: sprt\n" + PLAYERS,
        3,
        "format: an SPRT needs sprt settings (elo0, elo1, alpha, beta)",
    ),
    "sprt with elo0 above elo1": (
        "name: t\ngames: [quad]\nformat: sprt\nsprt: {elo0: 5, elo1: 0}\n" + PLAYERS,
        4,
        "sprt: elo0 (5) must be below elo1 (0)",
    ),
    "sprt with an infinite elo1": (
        "name: t\ngames: [quad]\nformat: sprt\nsprt: {elo0: 0, elo1: .inf}\n" + PLAYERS,
        4,
        "sprt: elo1 must be between -2000 and 2000, got inf",
    ),
    "sprt settings of another format": (
        "name: t\ngames: [quad]\nsprt: {elo0: 0, elo1: 5}\n" + PLAYERS,
        3,
        "sprt: only a tournament with format: sprt takes sprt settings",
    ),
    "challengers of a round robin": (
        "name: t\ngames: [quad]\nchallengers: 1\n" + PLAYERS,
        3,
        "challengers: only a gauntlet has challengers (format: gauntlet)",
    ),
    "tie-breaks of a round robin": (
        "name: t\ngames: [quad]\ntiebreaks: [buchholz]\n" + PLAYERS,
        3,
        "tiebreaks: only a Swiss ranks equal scores by tie-breaks (format: swiss); a"
        " knockout's drawn tie: tiebreak",
    ),
    "a tie-break named twice": (
        "name: t\ngames: [quad]\nformat: swiss\ntiebreaks:\n  - median-buchholz\n"
        "  - median-buchholz\n" + PLAYERS,
        6,
        "tiebreaks[1]: median-buchholz is named twice",
    ),
    "a tie-break of no kind": (
        "name: t\ngames: [quad]\nformat: swiss\ntiebreaks: [buchholz-cut-2]\n" + PLAYERS,
        4,
        "tiebreaks[0]: must be 'buchholz', 'buchholz-cut-1', 'median-buchholz' or"
        " 'sonneborn-berger', got 'buchholz-cut-2'",
    ),
    "a gauntlet of challengers only": (
        "name: t\ngames: [quad]\nformat: gauntlet\nchallengers: 2\n" + PLAYERS,
        4,
        "challengers: 2 challengers leave no other player of the 2 to play against",
    ),
    "an anchor who does not play": (
        "name: t\ngames: [quad]\nanchor: zed\n" + PLAYERS,
        3,
        "anchor: zed is not a player of this tournament",
    ),
    "an opening too long": (
        "name: t\ngames: [quad]\nopenings: 5000\n" + PLAYERS,
        3,
        "openings: 5000 steps: from 0 to 1000",
    ),
    "openings of no kind": (
        "name: t\ngames: [quad]\nopenings: book\n" + PLAYERS,
        3,
        "openings: expected a number of steps played at random (0 to 1000), built-in, or a"
        " book: {file: PATH, order: in-order or shuffled}; got 'book'",
    ),
    "a book's order": (
        "name: t\ngames: [quad]\nopenings:\n  file: book.txt\n  order: random\n" + PLAYERS,
        5,
        "openings.order: expected in-order or shuffled, got 'random'",
    ),
    "a book that is not there": (
        "name: t\ngames:\n  - id: quad\n    openings: {file: nowhere.txt}\n" + PLAYERS,
        4,
        "games[0].openings.file: ",
    ),
    "unknown key": (
        "name: t\ngames: [quad]\nconcurency: 2\n" + PLAYERS,
        3,
        "unknown key 'concurency' (did you mean concurrency?)",
    ),
    "unknown key in a player": (
        "name: t\ngames: [quad]\n" + PLAYERS + "    cmd: x\n",
        8,
        "players[1]: unknown key 'cmd'",
    ),
    "unknown game": (
        "name: t\ngames:\n  - quad\n  - hexpie\n" + PLAYERS,
        4,
        "games[1].id: unknown game 'hexpie' (did you mean hex-pie?)",
    ),
    "unknown game in a mapping": (
        "name: t\ngames:\n  - id: chess\n    rounds: 2\n" + PLAYERS,
        3,
        "games[0].id: unknown game 'chess'",
    ),
    "game listed twice": (
        "name: t\ngames: [quad, quad]\n" + PLAYERS,
        2,
        "games[1].id: game quad is listed twice",
    ),
    "duplicate player name": (
        "name: t\ngames: [quad]\n" + PLAYERS + "  - name: alpha\n    command: random\n",
        8,
        "players[2].name: player name alpha is used twice",
    ),
    "missing command": (
        "name: t\ngames: [quad]\nplayers:\n  - name: alpha\n    command: random\n  - name: beta\n",
        6,
        "players[1]: give a player either a command or a url",
    ),
    "missing games": ("name: t\n" + PLAYERS, 1, "missing key 'games'"),
    "wrong type": (
        "name: t\ngames: [quad]\nplay_clock: fast\n" + PLAYERS,
        3,
        "play_clock: expected an integer, got 'fast'",
    ),
    "wrong type in a game": (
        "name: t\ngames:\n  - id: quad\n    rounds: two\n" + PLAYERS,
        4,
        "games[0].rounds: expected an integer, got 'two'",
    ),
    "not a positive clock": (
        "name: t\ngames: [quad]\nstart_clock: 0\n" + PLAYERS,
        3,
        "start_clock: must be greater than 0, got 0",
    ),
    "unknown policy": (
        "name: t\ngames: [quad]\npolicy: lenient\n" + PLAYERS,
        3,
        "policy: must be 'forfeit' or 'random', got 'lenient'",
    ),
    "command that does not exist": (
        "name: t\ngames: [quad]\nplayers:\n  - name: alpha\n    command: random\n"
        "  - name: beta\n    command: no-such-bot-anywhere --fast\n",
        7,
        "players[1].command: command 'no-such-bot-anywhere' not found on PATH",
    ),
    "program path that does not exist": (
        "name: t\ngames: [quad]\nplayers:\n  - name: alpha\n    command: random\n"
        "  - name: beta\n    command: ./bots/beta\n",
        7,
        "players[1].command: no such program: ",
    ),
    "working directory that does not exist": (
        "name: t\ngames: [quad]\n" + PLAYERS + "    cwd: nowhere\n",
        8,
        "players[1].cwd: no such directory: ",
    ),
    "a person as a player": (
        "name: t\ngames: [quad]\nplayers:\n  - name: alpha\n    command: random\n"
        "  - name: me\n    command: human\n",
        7,
        "players[1].command: a person cannot play in a tournament",
    ),
    "one player only": (
        "name: t\ngames: [quad]\nplayers:\n  - name: alpha\n    command: random\n",
        3,
        "players: a tournament needs at least two players",
    ),
    "name with a space": (
        "name: my cup\ngames: [quad]\n" + PLAYERS,
        1,
        "name: 'my cup': use letters, digits and _ . + - only, no spaces",
    ),
    "key given twice": (
        "name: t\ngames: [quad]\nrounds: 1\nrounds: 2\n" + PLAYERS,
        4,
        "top level: key 'rounds' appears twice",
    ),
    "not YAML": ("name: t\ngames: [quad\n", 3, "not valid YAML"),
    "not a mapping": ("- quad\n- hex-pie\n", 1, "expected a mapping of settings"),
    "unknown limit": (
        "name: t\ngames: [quad]\nlimits:\n  memory: 100\n" + PLAYERS,
        4,
        "limits: unknown key 'memory' (did you mean memory_mb?)",
    ),
    "limit that is not positive": (
        "name: t\ngames: [quad]\n" + PLAYERS + "    limits:\n      cpu_s: 0\n",
        9,
        "players[1].limits.cpu_s: must be greater than 0, got 0",
    ),
    "a negative time margin": (
        "name: t\ngames: [quad]\ntime_margin: -5\n" + PLAYERS,
        3,
        "time_margin: must be greater than or equal to 0, got -5",
    ),
    "a time margin over a day": (
        "name: t\ngames: [quad]\ntime_margin: 86400001\n" + PLAYERS,
        3,
        "time_margin: must be at most 86400000 ms (a day), got 86400001",
    ),
    "a game's time margin that is no number": (
        "name: t\ngames:\n  - id: quad\n    time_margin: lots\n" + PLAYERS,
        4,
        "games[0].time_margin: expected an integer, got 'lots'",
    ),
    "a player's clock of 0": (
        "name: t\ngames: [quad]\n" + PLAYERS + "    play_clock: 0\n",
        8,
        "players[1].play_clock: must be greater than 0, got 0",
    ),
    "a player's clock that is not whole": (
        "name: t\ngames: [quad]\n" + PLAYERS + "    start_clock: 1.5\n",
        8,
        "players[1].start_clock: expected an integer, got 1.5",
    ),
    "a player's bank over a day": (
        "name: t\ngames: [quad]\n" + PLAYERS + "    time_bank: 86400001\n",
        8,
        "players[1].time_bank: must be at most 86400000 ms (a day), got 86400001",
    ),
    "a player's own margin": (
        "name: t\ngames: [quad]\n" + PLAYERS + "    time_margin: 100\n",
        8,
        "players[1]: unknown key 'time_margin' (a margin is every seat's alike: set"
        " time_margin at the top or in a game)",
    ),
    "a GGP player's own clock under a second": (
        "name: t\ngames: [quad]\n" + PLAYERS + "  - name: g\n    url: http://localhost:9147/\n"
        "    play_clock: 500\n",
        10,
        "players[2].play_clock: a GGP player is told its clocks in whole seconds: the play"
        " clock must be at least 1000 ms, not 500 (player g)",
    ),
}


@pytest.mark.parametrize("kind", list(ERRORS))
def test_a_config_error_is_one_line_with_file_line_and_key(tmp_path: Path, kind: str) -> None:
    text, line, message = ERRORS[kind]
    config = tmp_path / "cup.yaml"
    config.write_text(text)
    result = runner.invoke(app, ["tournament", str(config)])
    assert result.exit_code == 2
    assert result.stdout == ""
    (error,) = result.stderr.splitlines()
    assert error.startswith(f"referee: error: {config}:{line}: {message}"), error
    assert not (tmp_path / "results").exists(), "nothing may start before the config is good"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        # Two mistakes of shape, and a misspelt key whose missing twin is not said again.
        (
            "name: t\ngames: [quad]\nrounds: 0\nseed: x\nplyers: []\n",
            [
                (3, "rounds: must be greater than 0, got 0"),
                (4, "seed: "),
                (5, "unknown key 'plyers' (did you mean players?)"),
            ],
        ),
        # A game that is not one and a player without its program: each game and player is
        # checked on its own.
        (
            "name: t\ngames: [quad, tictac]\nplayers:\n  - name: a\n    command: random\n"
            "  - name: b\n    command: ./nowhere.py\n",
            [(2, "games[1].id: unknown game 'tictac'"), (7, "players[1].command: ")],
        ),
        # Both at once: the shape's mistake, and a program not there in a player of a good
        # shape of its own.
        (
            "name: t\ngames: [quad]\nplay_clok: 300\nplayers:\n  - name: a\n"
            "    command: random\n  - name: b\n    command: ./nowhere.py\n",
            [
                (3, "unknown key 'play_clok' (did you mean play_clock?)"),
                (8, "players[1].command: "),
            ],
        ),
        # A player's name taken by an entry refused for its shape is still taken.
        (
            "name: t\ngames: [quad]\nplayers:\n  - name: a\n    comand: random\n"
            "  - name: a\n    command: random\n",
            [
                (5, "players[0]: unknown key 'comand' (did you mean command?)"),
                (6, "players[1].name: player name a is used twice"),
            ],
        ),
    ],
)
def test_every_mistake_of_a_config_is_told_a_line_each(
    tmp_path: Path, text: str, said: list[tuple[int, str]]
) -> None:
    config = tmp_path / "cup.yaml"
    config.write_text(text)
    result = runner.invoke(app, ["tournament", str(config)])
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert len(lines) == len(said), lines
    for line, (number, message) in zip(lines, said, strict=True):
        assert line.startswith(f"referee: error: {config}:{number}: {message}"), line


def test_a_hostile_configs_thousand_mistakes_are_told_in_a_few_lines(tmp_path: Path) -> None:
    config = tmp_path / "cup.yaml"
    config.write_text("name: t\ngames: [quad]\n" + "".join(f"k{n}: 1\n" for n in range(1000)))
    result = runner.invoke(app, ["tournament", str(config)])
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 11
    assert lines[-1] == f"referee: error: {config}: and 990 more mistakes"


def test_an_empty_or_missing_config_is_an_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    for path in (empty, tmp_path / "absent.yaml"):
        result = runner.invoke(app, ["tournament", str(path)])
        assert result.exit_code == 2
        assert result.stderr.startswith(f"referee: error: {path}: ")


def test_a_full_config_is_read_with_defaults_and_overrides(tmp_path: Path) -> None:
    (tmp_path / "bots").mkdir()
    (tmp_path / "bots" / "bot.py").write_text("")
    config = tmp_path / "cup.yaml"
    config.write_text(
        "name: cup\nseed: 9\nrounds: 2\nplay_clock: 300\npolicy: random\nconcurrency: 3\n"
        "reuse: false\noutput: out/cup\n"
        "games:\n  - quad\n  - id: hex-pie\n    rounds: 1\n    play_clock: 900\n    time_bank: 50\n"
        "players:\n  - name: alpha\n    command: random\n    reuse: true\n"
        f"  - name: beta\n    command: {sys.executable} bot.py --fast\n    cwd: bots\n"
        "    env: {LEVEL: '3'}\n"
    )
    loaded = load_config(config)
    assert loaded.name == "cup"
    assert (loaded.seed, loaded.policy, loaded.concurrency) == (9, Policy.RANDOM, 3)
    assert loaded.output == tmp_path / "out" / "cup"
    quad, hex_pie = loaded.games
    assert (quad.game.id, quad.rounds, quad.clocks.start_ms, quad.clocks.play_ms) == (
        "quad",
        2,
        10_000,
        300,
    )
    assert (hex_pie.rounds, hex_pie.clocks.play_ms, hex_pie.clocks.time_bank_ms) == (1, 900, 50)
    alpha, beta = loaded.players
    assert alpha.reuse and not beta.reuse
    assert alpha.spec.argv[1].endswith("referee/players/programs/random_player.py")
    assert beta.spec.argv == (sys.executable, str(tmp_path / "bots" / "bot.py"), "--fast")
    assert beta.spec.cwd == tmp_path / "bots"
    assert beta.spec.env == {"LEVEL": "3"}
    assert alpha.spec.cwd is None, "without cwd, a player runs in a private directory"


def test_paths_in_a_command_are_taken_from_the_config_directory(tmp_path: Path) -> None:
    bots = tmp_path / "bots"
    bots.mkdir()
    (bots / "bot.py").write_text("")
    (bots / "weights.txt").write_text("")
    config = tmp_path / "cup.yaml"
    config.write_text(
        "name: cup\ngames: [quad]\nplayers:\n  - name: alpha\n    command: random\n"
        f"  - name: beta\n    command: {sys.executable} bots/bot.py --load bots/weights.txt 3\n"
        "  - name: gamma\n    command: python3 bot.py --depth 3\n    cwd: bots\n"
    )
    _, beta, gamma = load_config(config).players
    assert beta.spec.argv == (
        sys.executable,
        str(bots / "bot.py"),
        "--load",
        str(bots / "weights.txt"),
        "3",
    )
    assert beta.spec.cwd is None
    assert gamma.spec.argv == ("python3", str(bots / "bot.py"), "--depth", "3")
    assert gamma.spec.cwd == bots


def test_limits_are_set_for_all_and_for_one_player(tmp_path: Path) -> None:
    config = tmp_path / "cup.yaml"
    config.write_text(
        "name: cup\ngames: [quad]\nlimits: {memory_mb: 256, cpu_s: 20}\n"
        + PLAYERS
        + "    limits:\n      cpu_s: 5\n      processes: 8\n"
    )
    alpha, beta = load_config(config).players
    default = Limits()
    assert alpha.spec.limits == replace(default, memory_mb=256, cpu_s=20)
    assert beta.spec.limits == replace(default, memory_mb=256, cpu_s=5, processes=8)


def test_the_default_output_is_results_beside_the_config(tmp_path: Path) -> None:
    config = tmp_path / "cup.yaml"
    config.write_text("name: cup\ngames: [quad]\n" + PLAYERS)
    assert load_config(config).output == tmp_path / "results" / "cup"


def test_a_script_missing_from_a_command_is_named_at_its_line(tmp_path: Path) -> None:
    config = tmp_path / "cup.yaml"
    config.write_text(
        "name: cup\ngames: [quad]\nplayers:\n  - name: a\n    command: random\n"
        f"  - name: b\n    command: {sys.executable} nosuchbot.py\n"
    )
    with pytest.raises(ConfigError) as raised:
        load_config(config)
    assert str(raised.value) == f"{config}:7: players[1].command: no such file: nosuchbot.py"


def test_a_players_own_clocks_are_its_seats_at_every_game_and_the_margin_everyones(
    tmp_path: Path,
) -> None:
    config = tmp_path / "cup.yaml"
    config.write_text(
        "name: cup\nplay_clock: 300\ntime_margin: 50\n"
        "games:\n  - quad\n  - id: hex-pie\n    play_clock: 900\n    time_margin: 0\n"
        + PLAYERS
        + "    play_clock: 2000\n    time_bank: 100\n"
    )
    loaded = load_config(config)
    quad, hex_pie = loaded.games
    assert (quad.clocks.play_ms, quad.clocks.margin_ms) == (300, 50)
    assert (hex_pie.clocks.play_ms, hex_pie.clocks.margin_ms) == (900, 0)
    alpha, beta = loaded.players
    assert alpha.clocks(quad.clocks) == quad.clocks
    assert beta.clocks(quad.clocks) == replace(quad.clocks, play_ms=2000, time_bank_ms=100)
    assert beta.clocks(hex_pie.clocks) == replace(hex_pie.clocks, play_ms=2000, time_bank_ms=100)
    seats = loaded.seat_clocks(quad.clocks, ("beta", "alpha"))
    assert [c.play_ms for c in seats] == [2000, 300] and {c.margin_ms for c in seats} == {50}
    # Every seat with the game's clocks: none of its own to record.
    assert loaded.seat_clocks(quad.clocks, ("alpha", "alpha")) == ()


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("name: a\ntime_margin: 100\ngames: [ticblock]\n", ":2: time_margin: not in an arena"),
        (
            "name: a\ngames:\n  - id: ticblock\n    time_margin: 100\n",
            ":4: games[0].time_margin: not in an arena",
        ),
    ],
)
def test_an_arena_judges_exactly_and_takes_no_margin(tmp_path: Path, text: str, said: str) -> None:
    path = tmp_path / "arena.yaml"
    assert parse_arena_config(path, "name: a\ngames: [ticblock]\n").tournament.games[0].clocks == (
        Clocks(play_ms=1000)
    )
    with pytest.raises(ConfigError) as raised:
        parse_arena_config(path, text)
    assert str(raised.value).startswith(f"{path}{said}: an arena judges every answer"), raised.value


def test_a_scheduled_match_carries_each_seats_clocks_and_a_worker_rebuilds_them(
    tmp_path: Path,
) -> None:
    config = tmp_path / "cup.yaml"
    config.write_text(
        "name: cup\nplay_clock: 300\ntime_margin: 50\ngames: [quad]\n"
        + PLAYERS
        + "    play_clock: 2000\n"
    )
    loaded = load_config(config)
    matches = schedule_of(loaded)
    assert matches
    for match in matches:
        own = dict(zip(match.players, match.seat_clocks, strict=True))
        assert (own["alpha"].play_ms, own["beta"].play_ms) == (300, 2000)
        assert {clocks.margin_ms for clocks in own.values()} == {50}
        assert MatchOrder.of(match).rebuild(loaded, "worker") == match
