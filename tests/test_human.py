"""A person playing at a real terminal (a pseudo-terminal driven by pexpect): numbered moves
in a grid, help, an empty line, a bad move, Ctrl-C ending the match at once, and `quit`
resigning it."""

from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path

import pexpect
import pytest
from typer.testing import CliRunner

from referee.cli import app
from referee.players.human import move_menu
from tests.support.paths import EXAMPLES

PROMPT = "xcplayer> "


def spawn(tmp_path: Path) -> pexpect.spawn:
    out = tmp_path / "m.json"
    args = ["-m", "referee", "play", "ticblock", "-p", "xcplayer=human", "-p", "obplayer=random"]
    return pexpect.spawn(
        sys.executable,
        # The program answers long before its clock ends, however loaded the machine.
        [*args, "--out", str(out), "--seed", "3", "--play-clock", "30000"],
        encoding="utf-8",
        timeout=60,  # a loaded machine; a wait that ends at once ends long before
        dimensions=(60, 200),
        # As at a terminal: a test run in the background of a script (CI's, say) inherits
        # SIGINT ignored, and a Python started so keeps ignoring it.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


@pytest.mark.slow
def test_a_person_plays_by_number_and_ctrl_c_ends_the_match_at_once(tmp_path: Path) -> None:
    child = spawn(tmp_path)
    child.expect("you are xcplayer: X, then X crossing; obplayer: O, then # blocking; . empty")
    child.expect(
        r"\(mark ROW COLUMN\), ROW down the side, COLUMN across the top:"
        r"\r\n    1 2 3\r\n  1 1 2 3\r\n  2 4 5 6\r\n  3 7 8 9"
    )
    child.expect_exact(PROMPT)
    child.sendline("help")
    child.expect_exact("quit    leave the match (you lose it)")
    child.expect_exact(PROMPT)
    child.sendline("")  # asks again, and says nothing else
    child.expect_exact(PROMPT)
    assert child.before.strip() == ""
    child.sendline("(mark 9 9)")
    child.expect_exact("'(mark 9 9)' is not a move of this game; type a number from 1 to 9")
    child.expect_exact(PROMPT)
    child.sendline("5")  # the centre
    child.expect_exact("step 1: xcplayer (mark 2 2), obplayer noop")
    # Printed once: the step line comes from the match, not again from the person's seat.
    child.expect_exact(PROMPT)
    assert child.before.count("step 1:") == 0
    assert child.before.count("step 2:") == 1
    asked = time.monotonic()
    child.sendintr()
    child.expect(pexpect.EOF)
    waited = time.monotonic() - asked
    child.close()
    assert child.exitstatus == 130
    assert "interrupted; the match is recorded as aborted" in child.before
    assert "1 2 3" not in child.before  # no board drawn again on the way out
    transcript = json.loads((tmp_path / "m.json").read_text())
    assert transcript["end_reason"] == "aborted"
    assert [step["moves"]["xcplayer"] for step in transcript["steps"]] == ["(mark 2 2)", "noop"]
    # Nothing waited for another line: well under the 1 s that ending the players may take.
    assert waited < 30, waited


@pytest.mark.slow
def test_a_person_who_types_quit_resigns_and_the_record_verifies(tmp_path: Path) -> None:
    child = spawn(tmp_path)
    child.expect_exact(PROMPT)
    child.sendline("5")
    child.expect_exact("step 1: xcplayer (mark 2 2), obplayer noop")
    child.expect_exact(PROMPT)
    child.sendline("quit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    said = child.before.replace("\r\n", "\n")
    assert "fault: xcplayer: resigned at step 3, typed quit at the prompt\n" in said
    assert "result: xcplayer 0, obplayer 100 (xcplayer resigned after 2 steps)\n" in said
    assert "crash" not in said
    out = tmp_path / "m.json"
    transcript = json.loads(out.read_text())
    assert transcript["end_reason"] == "forfeit"
    assert [(f["step"], f["role"], f["kind"]) for f in transcript["faults"]] == [
        (3, "xcplayer", "resigned")
    ]
    verified = CliRunner().invoke(app, ["replay", "--verify", str(out)])
    assert verified.exit_code == 0, verified.output
    assert verified.stdout.splitlines()[-1] == (
        f"{out}: verified; ticblock, result: xcplayer 0, obplayer 100"
        " (xcplayer resigned after 2 steps)"
    )


def test_the_end_of_input_is_no_resignation(tmp_path: Path) -> None:
    """Ctrl-D, or piped moves running out: the seat is gone, but nobody chose to resign."""
    out = tmp_path / "m.json"
    args = ["play", "ticblock", "-p", "xcplayer=human", "-p", "obplayer=random", "--out", str(out)]
    result = CliRunner().invoke(app, args, input="5\n")
    assert result.exit_code == 0, result.output
    (fault,) = json.loads(out.read_text())["faults"]
    assert (fault["kind"], fault["detail"]) == (
        "crash",
        "its input ended (Ctrl-D, or the end of piped input)",
    )
    assert (
        "result: xcplayer 0, obplayer 100 (forfeit after 2 steps; xcplayer: crash at step 3,"
        f" {fault['detail']})\n"
    ) in result.stdout


@pytest.mark.parametrize(
    ("legal", "menu"),
    [
        (
            ["(place a 1)", "(place a 10)", "(place b 2)", "swap"],
            "(place ROW COLUMN), ROW down the side, COLUMN across the top:\n"
            "     1  2 10\n  a  1  .  2\n  b  .  3  .\n   4  swap",
        ),
        (
            ["(bid 0 no_tiebreaker)", "(bid 0 with_tiebreaker)", "(bid 1 no_tiebreaker)"],
            "(bid ROW COLUMN), ROW down the side, COLUMN across the top:\n"
            "      no_tiebreaker with_tiebreaker\n"
            "  0               1               2\n"
            "  1               3               .",
        ),
        (["noop"], "   1  noop"),
        (["(mark 1 2 3 4)", "(mark 1 2 3 1)"], "   1  (mark 1 2 3 4)\n   2  (mark 1 2 3 1)"),
    ],
)
def test_moves_are_numbered_in_a_grid_of_cells_or_a_list(legal: list[str], menu: str) -> None:
    assert move_menu(legal) == menu


def test_the_rules_a_person_is_pointed_to_are_shown_for_a_rulesheet_too(tmp_path: Path) -> None:
    rules = EXAMPLES / "three-in-a-row.kif"
    out = tmp_path / "m.json"
    args = ["play", str(rules), "-p", "red=human", "-p", "green=random", "-p", "blue=random"]
    result = CliRunner().invoke(app, [*args, "--out", str(out)], input="rules\nquit\n")
    said = result.stdout
    assert "You play red in three-in-a-row. At your turn, type rules to read its rules" in said
    assert "referee rules three-in-a-row" not in said  # a command that cannot find the file
    assert "(<= (legal ?r (claim ?m ?n))" in said.partition("red> ")[2]
