"""The knockout: a bracket seeded so that the top seeds meet last, byes for the top seeds of
a field short of a power of two, mini-matches with their tie-breaks, a run that goes on
where it was stopped, and the bracket in the standings."""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from referee.cli import app
from referee.tournaments.knockout import Rules, TieBreak, bracket_size, read_bracket, slots, ties
from tests.support.paths import ROOT

runner = CliRunner()
LINE_BOT = ROOT / "benchmarks" / "bots" / "line_bot.py"
# Always its first legal move: two of them draw every mini-match, each winning as the
# first seat what the other wins there.
FIRST_MOVE = """import sys
for line in sys.stdin:
    words = line.split(maxsplit=3)
    if words[:1] == ["start"]:
        print("ready", flush=True)
    elif words[:1] == ["go"]:
        rest = words[3]
        print(rest[: rest.index(")") + 1] if rest.startswith("(") else rest.split()[0], flush=True)
    elif words[:1] == ["quit"]:
        break
"""


def test_the_bracket_meets_the_top_seeds_last() -> None:
    assert slots(8) == [1, 8, 4, 5, 2, 7, 3, 6]
    assert [bracket_size(n) for n in (2, 3, 8, 13, 17)] == [2, 4, 8, 16, 32]
    # Each first-round tie adds up to the size plus one; 1 and 2 are in different halves.
    order = slots(16)
    assert all(a + b == 17 for a, b in zip(order[::2], order[1::2], strict=True))
    assert (1 in order[:8]) != (2 in order[:8])


def test_a_field_of_thirteen_gives_its_three_top_seeds_a_bye() -> None:
    seeds = [f"s{n}" for n in range(1, 14)]
    (first,) = ties(seeds, Rules(2, 2, TieBreak.HIGHER_SEED, 0), [], "quad")
    byes = [tie for tie in first if tie.low is None]
    assert [tie.high for tie in byes] == ["s1", "s2", "s3"]
    assert all(tie.winner == tie.high and tie.decided_by == "bye" for tie in byes)
    played = [tie for tie in first if tie.low is not None]
    assert sorted((tie.high_seed, tie.low_seed) for tie in played) == [
        (4, 13), (5, 12), (6, 11), (7, 10), (8, 9),
    ]  # fmt: skip
    assert all(len(tie.games) == 2 and tie.winner is None for tie in played)


def config(directory: Path, players: dict[str, str], extra: str = "") -> Path:
    entries = "".join(
        f"  - {{name: {name}, command: {command}}}\n" for name, command in players.items()
    )
    path = directory / "cup.yaml"
    path.write_text(
        f"name: cup\nformat: knockout\ngames: [double-tictactoe]\nconcurrency: 2\n{extra}"
        f"players:\n{entries}"
    )
    return path


def line_bots(count: int) -> dict[str, str]:
    return {
        f"k{n:02d}": f"{sys.executable} {LINE_BOT} {1 - n / (count - 1):.3f}" for n in range(count)
    }


@pytest.mark.usefixtures("every_transcript_verifies")
def test_thirteen_players_play_out_their_bracket(tmp_path: Path) -> None:
    path = config(tmp_path, line_bots(13))
    result = runner.invoke(app, ["tournament", str(path), "--json"])
    assert result.exit_code == 0, result.output
    knockout = json.loads(result.stdout)["knockout"]
    rounds = knockout["rounds"]
    assert [len(r) for r in rounds] == [8, 4, 2, 1]
    assert sum(1 for tie in rounds[0] if tie["decided_by"] == "bye") == 3
    # Every winner plays the next round; the final's is the winner.
    for this, following in itertools.pairwise(rounds):
        winners = {tie["winner"] for tie in this}
        assert {p for tie in following for p in tie["players"]} == winners
    finishes = knockout["finishes"]
    assert finishes[0] == {"player": rounds[-1][0]["winner"], "finish": "winner"}
    assert len(finishes) == 13 and finishes[1]["finish"] == "out in the final"
    for tie in (tie for r in rounds for tie in r if tie["decided_by"] != "bye"):
        high, low = tie["points"]
        winner = tie["players"][0] if high > low else tie["players"][1]
        if high != low:
            assert tie["winner"] == winner
        assert tie["games"] in (2, 4)
    standings = runner.invoke(app, ["standings", str(tmp_path / "results" / "cup")])
    assert "Knockout: 13 players, 4 rounds" in standings.stdout
    assert "  (1) k00: a bye" in standings.stdout
    # The report draws the bracket: every tie a box, the player who went on in bold.
    site = runner.invoke(
        app, ["report", str(tmp_path / "results" / "cup"), "--out", str(tmp_path / "site")]
    )
    assert site.exit_code == 0, site.output
    index = (tmp_path / "site" / "index.html").read_text()
    assert 'class="chart bracket"' in index
    assert index.count('<g class="tie"') == 8 + 4 + 2 + 1
    champion = rounds[-1][0]["winner"]
    seed = rounds[-1][0]["seeds"][rounds[-1][0]["players"].index(champion)]
    assert f'class="won">({seed}) {champion} ' in index


@pytest.mark.parametrize("rule", ["higher-seed", "draw"])
def test_a_drawn_mini_match_goes_to_its_tie_break(tmp_path: Path, rule: str) -> None:
    # In a folder of its own: the jail never shows a player the folder of the config.
    bot = tmp_path / "bots" / "first.py"
    bot.parent.mkdir()
    bot.write_text(FIRST_MOVE)
    players = {name: f"{sys.executable} {bot}" for name in ("a", "b", "c", "d")}
    path = config(tmp_path, players, f"tiebreak: {rule}\n")
    result = runner.invoke(app, ["tournament", str(path), "--json"])
    assert result.exit_code == 0, result.output
    rounds = json.loads(result.stdout)["knockout"]["rounds"]
    expected = "higher seed" if rule == "higher-seed" else "drawn by the seed"
    for tie in (tie for r in rounds for tie in r):
        # Two games, then two tie-break games: each won by the first seat.
        assert tie["games"] == 4 and tie["points"] == [2.0, 2.0]
        assert tie["decided_by"] == expected
        if rule == "higher-seed":
            assert tie["winner"] == tie["players"][0]
    assert len(list((tmp_path / "results" / "cup").glob("*.json"))) == 3 * 4


def test_kill_9_then_the_same_command_plays_the_bracket_of_an_uninterrupted_run(
    tmp_path: Path,
) -> None:
    whole, stopped = tmp_path / "whole", tmp_path / "stopped"
    for directory in (whole, stopped):
        directory.mkdir()
        config(directory, line_bots(8))
    command = [sys.executable, "-m", "referee", "tournament", "cup.yaml", "--json"]
    uninterrupted = subprocess.run(command, cwd=whole, capture_output=True, text=True, check=True)
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    process = subprocess.Popen(command, cwd=stopped, **quiet)
    results = stopped / "results" / "cup"
    while process.poll() is None:
        if len(list(results.glob("*-r2-*.json"))) >= 1:
            process.kill()  # SIGKILL, in the quarter-finals' successor round
            break
        time.sleep(0.01)
    assert process.wait() == -9, "the run ended before it could be killed"
    again = subprocess.run(command, cwd=stopped, capture_output=True, text=True, check=True)
    assert read_bracket(results) == read_bracket(whole / "results" / "cup")
    assert json.loads(again.stdout)["knockout"] == json.loads(uninterrupted.stdout)["knockout"]


def test_ratings_of_an_earlier_tournament_seed_the_bracket(tmp_path: Path) -> None:
    bots = line_bots(4)
    earlier = tmp_path / "league.yaml"
    entries = "".join(f"  - {{name: {n}, command: {c}}}\n" for n, c in bots.items())
    earlier.write_text(
        f"name: league\ngames: [double-tictactoe]\nrounds: 4\nconcurrency: 2\nplayers:\n{entries}"
    )
    played = runner.invoke(app, ["tournament", str(earlier), "--json"])
    assert played.exit_code == 0, played.output
    ranked = [row["player"] for row in json.loads(played.stdout)["overall"]]
    # The knockout lists them backwards; the league's ratings put them in order.
    path = config(tmp_path, dict(reversed(bots.items())), "seeding: results/league\n")
    result = runner.invoke(app, ["tournament", str(path)])
    assert result.exit_code == 0, result.output
    bracket = read_bracket(tmp_path / "results" / "cup")
    assert bracket is not None and list(bracket.seeds) == ranked


REFUSED = {
    "two games": (
        "games: [quad, ticblock]\n",
        "games: a knockout plays one game; this config has 2",
    ),
    "a tie-break in a round robin": (
        "format: round-robin\ntiebreak: draw\n",
        "tiebreak: only a knockout has tie-break games and a seeding (format: knockout)",
    ),
    "a knockout's tie-break in a Swiss": (
        "format: swiss\ntiebreak: draw\n",
        "tiebreak: only a knockout has tie-break games and a seeding (format: knockout); a"
        " Swiss ranks its equal scores by tiebreaks: [...]",
    ),
    "no seeding directory": ("seeding: nowhere\n", "seeding: no such directory: "),
    "rounds": ("rounds: 3\n", "rounds: a knockout plays until one player is left: it has no"),
}


@pytest.mark.parametrize("kind", list(REFUSED))
def test_a_knockout_config_error_is_one_line(tmp_path: Path, kind: str) -> None:
    extra, message = REFUSED[kind]
    path = tmp_path / "cup.yaml"
    lines = {"format": "format: knockout\n", "games": "games: [quad]\n"}
    for line in extra.splitlines(keepends=True):
        lines[line.split(":")[0]] = line
    path.write_text(
        "name: cup\n" + "".join(lines.values())
        + "players:\n  - {name: a, command: random}\n  - {name: b, command: random}\n"
    )  # fmt: skip
    result = runner.invoke(app, ["tournament", str(path)])
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert message in line and line.startswith(f"referee: error: {path}:"), line


def test_each_round_is_shown_as_its_players_are_known(tmp_path: Path) -> None:
    path = config(tmp_path, line_bots(5))
    result = runner.invoke(app, ["tournament", str(path)])
    assert result.exit_code == 0, result.output
    shown = [line for line in result.stderr.splitlines() if " of 3): " in line]
    assert shown[0] == (
        "quarter-final (1 of 3): (1) k00 bye, (4) k03 vs (5) k04, (2) k01 bye, (3) k02 bye"
    )
    assert [line.split(" (")[0] for line in shown] == ["quarter-final", "semi-final", "final"]
    # The bar names the winner at the end, not a leader on points, which in a knockout may
    # be a player out of it.
    assert re.search(r", winner k0[01]; ETA", result.stderr), result.stderr
    assert "leader" not in result.stderr


def test_a_player_removed_from_a_knockout_loses_its_ties_by_walkover(tmp_path: Path) -> None:
    bots = line_bots(5)
    path = config(tmp_path, bots)
    assert runner.invoke(app, ["tournament", str(path)]).exit_code == 0
    del bots["k03"]
    path = config(tmp_path, bots)
    result = runner.invoke(app, ["tournament", str(path), "--json"])
    assert result.exit_code == 0, result.output
    assert "player k03: no longer in the config; its" in result.stderr
    rounds = json.loads(result.stdout)["knockout"]["rounds"]
    # Seeds 4 and 5 met in the first round: k04 goes on by walkover.
    (first,) = [tie for tie in rounds[0] if tie["decided_by"] != "bye"]
    assert first["players"] == ["k03", "k04"] and first["winner"] == "k04"
    assert first["decided_by"] == "walkover"
    assert rounds[-1][0]["winner"] is not None
