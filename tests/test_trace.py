"""--trace: every line exchanged with every player, both ways, in order, with its role."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from typer.testing import CliRunner

from referee.cli import app
from referee.players.builtin import PROGRAMS
from referee.players.trace import Trace

HERE = Path(__file__).resolve().parent
MISTAKES = HERE / "players" / "mistakes"
RANDOM = f"{sys.executable} {PROGRAMS / 'random_player.py'}"
LINE = re.compile(r"(\d+\.\d{3}) (\S+) (\S+) ([<>]) (.*?)(?:  # (.*))?")
runner = CliRunner()
# Clocks no answer comes near on a loaded machine: a timeout would change what is traced.
SLOW = ["--start-clock", "60000", "--play-clock", "30000"]


def traced(path: Path) -> list[tuple[float, str, str, str, str, str]]:
    rows = []
    for line in path.read_text().splitlines():
        found = LINE.fullmatch(line)
        assert found, line
        seconds, match, role, direction, text, note = found.groups()
        rows.append((float(seconds), match, role, direction, text, note or ""))
    return rows


def test_play_traces_every_line_both_ways(tmp_path: Path) -> None:
    out, trace = tmp_path / "m.json", tmp_path / "t.log"
    args = ["play", "ticblock", "-p", f"xcplayer={RANDOM}", "-p", f"obplayer={RANDOM}", *SLOW]
    result = runner.invoke(app, [*args, "--out", str(out), "--trace", str(trace)])
    assert result.exit_code == 0, result.output
    transcript = json.loads(out.read_text())
    rows = traced(trace)
    assert [row[0] for row in rows] == sorted(row[0] for row in rows)
    for role in ("xcplayer", "obplayer"):
        sent = [text for _, match, r, d, text, _ in rows if r == role and d == ">"]
        answers = [text for _, _, r, d, text, _ in rows if r == role and d == "<"]
        assert {match for _, match, r, *_ in rows if r == role} == {transcript["match_id"]}
        # Every line the referee sent, in order: start, go and moves, end, quit.
        assert sent[0].startswith(f"start {transcript['match_id']} ticblock {role} ")
        moves = [line for line in sent if line.startswith("moves ")]
        assert moves == [
            f"moves {step['step']} " + " ".join(step["moves"].values())
            for step in transcript["steps"]
        ]
        goals = " ".join(str(goal) for goal in transcript["goals"].values())
        assert sent[-2:] == [f"end {goals} terminal", "quit"]
        # Every answer it wrote: ready, then its move at each step it was asked.
        asked = [step for step in transcript["steps"] if role in step["times_ms"]]
        assert answers == ["ready", *(step["moves"][role] for step in asked)]
        assert sum(line.startswith("go ") for line in sent) == len(asked)


def test_a_line_nobody_asked_for_is_traced_with_why_it_was_ignored(tmp_path: Path) -> None:
    trace = tmp_path / "t.log"
    # It writes a line of debug text, then its move: the first is taken for the answer.
    debug = f"{sys.executable} {MISTAKES / 'debug_print.py'}"
    args = ["play", "ticblock", "-p", f"xcplayer={debug}", "-p", f"obplayer={RANDOM}", *SLOW]
    args += ["--policy", "random", "--out", str(tmp_path / "m.json"), "--trace", str(trace)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    rows = traced(trace)
    written = [
        (text, note) for _, _, role, way, text, note in rows if (role, way) == ("xcplayer", "<")
    ]
    assert written[:2] == [("ready", ""), ("thinking, legal moves: 9", "")]
    move, note = written[2]
    assert (move.startswith("(mark "), note) == (True, "nobody asked for it: ignored")


def test_a_tournament_traces_with_trace_true(tmp_path: Path) -> None:
    config = tmp_path / "cup.yaml"
    config.write_text(
        "name: cup\ngames: [quad]\ntrace: true\nplayers:\n"
        f"  - {{name: a, command: {RANDOM}}}\n  - {{name: b, command: {RANDOM}}}\n"
    )
    result = runner.invoke(app, ["tournament", str(config)])
    assert result.exit_code == 0, result.output
    rows = traced(tmp_path / "results" / "cup" / "trace.log")
    matches = {match for _, match, *_ in rows}
    assert len(matches) == 2
    for match in matches:
        roles = {role for _, m, role, *_ in rows if m == match}
        assert roles == {"x", "o"}


def test_validate_traces_the_program_under_test(tmp_path: Path) -> None:
    trace = tmp_path / "t.log"
    args = ["validate", RANDOM, "--games", "quad", "--matches-per-role", "1"]
    result = runner.invoke(app, [*args, "--trace", str(trace)])
    assert result.exit_code == 0, result.output
    rows = traced(trace)
    starts = [text for *_, direction, text, _ in rows if text.startswith("start ")]
    assert len(starts) == 4  # each role, in a reused process and a fresh one
    assert sum(text == "ready" for *_, text, _ in rows) == 4


def test_an_unwritable_trace_is_one_line(tmp_path: Path) -> None:
    args = ["play", "quad", "-p", "x=random", "-p", "o=random", "--out", str(tmp_path / "m.json")]
    result = runner.invoke(app, [*args, "--trace", str(tmp_path)])
    assert result.exit_code == 2
    assert result.stderr == f"referee: error: {tmp_path}: is a directory, not a trace file\n"


def test_a_player_cannot_write_terminal_controls_into_the_trace(tmp_path: Path) -> None:
    trace = Trace(tmp_path / "t.log")
    trace.channel("bot").received("\x1b[2Jcleared\rover")
    trace.close()
    (line,) = (tmp_path / "t.log").read_text().splitlines()
    assert line == "0.000 bot < \\x1b[2Jcleared\\x0dover"
