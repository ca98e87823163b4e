"""Validation: the sample players pass; every misbehaving player fails the right check, in time."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from dataclasses import asdict, replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from referee.cli import app
from referee.clock import Clocks
from referee.games import GAMES, StateLimits, get_game, load_rulesheet
from referee.players.base import PlayerSpec
from referee.players.builtin import PROGRAMS, player_spec
from referee.players.starter import STARTERS, build_first
from referee.sandbox.isolation import machine_protections
from referee.sandbox.limits import Limits
from referee.validate import Report, Verdict, time_bound_s, validate
from tests.support.facilities import missing

# Every transcript these tests write must replay and verify (issue: replay).
pytestmark = pytest.mark.usefixtures("every_transcript_verifies")

HERE = Path(__file__).resolve().parent
MISBEHAVING = HERE / "players" / "misbehaving.py"
QUICK = Clocks(start_ms=1_000, play_ms=250)
# The minimal bot of docs/protocol.md, which needs nothing of the referee's package.
SAMPLE_BOT = f"{sys.executable} {STARTERS / 'random_player.py'}"
runner = CliRunner()


def run(
    spec: PlayerSpec, games: list[str], tmp_path: Path, clocks: Clocks = QUICK, per_role: int = 2
) -> Report:
    return asyncio.run(validate(spec, [get_game(g) for g in games], per_role, clocks, tmp_path))


def verdicts(report: Report) -> dict[str, Verdict]:
    return {check.name: check.verdict for check in report.checks}


@pytest.mark.parametrize(
    "command",
    [
        f"{sys.executable} {PROGRAMS / 'random_player.py'}",
        f"sh {STARTERS / 'random_player.sh'}",
    ],
    ids=["random-python", "random-shell"],
)
@pytest.mark.slow
def test_the_random_sample_players_pass_every_check_in_every_game(
    tmp_path: Path, command: str
) -> None:
    report = run(player_spec(command), list(GAMES), tmp_path)
    assert set(verdicts(report).values()) == {Verdict.PASS}, report.checks
    assert report.matches == 5 * 2 * 3


@pytest.mark.slow
def test_the_mcts_sample_player_passes(tmp_path: Path) -> None:
    # mcts thinks until 75% of its clock less 30 ms: on a machine the rest of the suite
    # loads, where a player weighs less than the suite's own processes, 300 ms left too
    # little for it to be scheduled again in time.
    report = run(player_spec("mcts"), ["ticblock"], tmp_path, Clocks(5_000, 600), per_role=1)
    assert report.verdict is not Verdict.FAIL, report.checks
    times = next(check for check in report.checks if check.name == "response time")
    assert "of 600 ms" in times.detail


# mode, extra arguments, the check that must fail, how its detail begins
ZOO = [
    ("silent-start", (), "start", "ticblock, xcplayer, reused process: no answer within 1000 ms"),
    ("bad-ready", (), "start", "ticblock, xcplayer, reused process: answered 'ok' instead of"),
    ("late", ("--at", "1", "--delay-ms", "400"), "play clock",
     "ticblock, xcplayer, step 1: no answer within 250 ms"),
    ("illegal", (), "legal moves", "ticblock, xcplayer, step 1: played noop, which is not legal"),
    ("garbage", (), "clean output", "ticblock, xcplayer, step 1: answered 'I think, therefore"),
    ("huge", (), "clean output", "ticblock, xcplayer, step 1: a line longer than 64 KiB"),
    ("not-utf8", (), "clean output", "ticblock, xcplayer, step 1: a line that is not UTF-8"),
    ("chatty", (), "clean output", "ticblock, "),
    ("exit", (), "stays up", "ticblock, xcplayer, step 1: exited with code 3"),
    ("close-stdout", (), "stays up", "ticblock, xcplayer, step "),
    ("ignore-term", (), "quit", "ticblock, xcplayer, reused process: still running 1000 ms"),
    # 5 MiB, less what was still in the pipe when the match ended (up to 64 KiB).
    ("stderr-flood", (), "stderr", "at most 5"),
]  # fmt: skip


@pytest.mark.parametrize(("mode", "args", "check", "detail"), ZOO, ids=[z[0] for z in ZOO])
@pytest.mark.slow
def test_a_misbehaving_player_fails_the_right_check_within_the_bound(
    tmp_path: Path, mode: str, args: tuple[str, ...], check: str, detail: str
) -> None:
    spec = PlayerSpec("bot", (sys.executable, str(MISBEHAVING), mode, *args))
    report = run(spec, ["ticblock"], tmp_path)
    failed = {c.name: c for c in report.checks if c.verdict is Verdict.FAIL}
    assert check in failed, report.checks
    assert failed[check].detail.startswith(detail), failed[check].detail
    assert report.verdict is Verdict.FAIL
    assert report.seconds < report.bound_s
    assert verdicts(report)["bounded"] is Verdict.PASS


@pytest.mark.parametrize(
    "jailed", [pytest.param(True, marks=pytest.mark.jail), False], ids=["jail", "no jail"]
)
def test_a_player_that_leaves_a_child_fails_no_leftovers_unless_the_jail_ends_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jailed: bool
) -> None:
    protections = machine_protections()
    if jailed and protections.jail is None:
        missing(
            f"no jail on this machine: {protections.why_not}",
            under_ci=f"CI installs bubblewrap: {protections.why_not}",
        )
    if not jailed:
        bare = replace(protections, jail=None)
        monkeypatch.setattr("referee.sandbox.spawn.machine_protections", lambda: bare)
    spec = PlayerSpec("bot", (sys.executable, str(MISBEHAVING), "child"))
    report = run(spec, ["ticblock"], tmp_path)
    check = next(c for c in report.checks if c.name == "no leftovers")
    if jailed:
        # Its child dies with the jail, at the bot's exit: nothing can be left behind.
        assert (check.verdict, check.detail) == (Verdict.PASS, "none left")
    else:
        assert check.verdict is Verdict.FAIL
        assert check.detail.startswith("ticblock, xcplayer, reused process: 2 process(es) still")


def test_a_player_over_its_limits_fails_the_limits_check(tmp_path: Path) -> None:
    spec = PlayerSpec(
        "bot", (sys.executable, str(MISBEHAVING), "memory-hog"), limits=Limits(memory_mb=64)
    )
    report = run(spec, ["ticblock"], tmp_path, per_role=1)
    failed = {c.name: c.detail for c in report.checks if c.verdict is Verdict.FAIL}
    assert failed["limits"].startswith(
        "ticblock, xcplayer, step 1: exceeded its memory limit 64 MiB"
    ), failed
    assert "stays up" not in failed
    assert report.seconds < report.bound_s


def test_the_bound_counts_every_match_at_its_longest() -> None:
    game = get_game("hex-pie")
    # 2 roles x 3 matches, each at most 1 s to start + 82 steps x 0.5 s + 10 s of sends,
    # and 4 processes, each 4 s to quit and be reaped; and 2 more, a reused process of each
    # role replaced before its second match after 1 s to write its late answers.
    assert time_bound_s([game], 2, Clocks(1_000, 500)) == 6 * (1 + 41 + 10) + 4 * 4 + 2 * 5


def test_validate_command_prints_checks_and_a_verdict(tmp_path: Path) -> None:
    keep = tmp_path / "kept"
    random_bot = f"{sys.executable} {PROGRAMS / 'random_player.py'}"
    result = runner.invoke(
        app,
        ["validate", random_bot, "--games", "quad,ticblock", "--keep", str(keep), "--cpu-s", "9"],
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split()[:4] == ["check", "result", "what", "detail"]
    # A machine without a memory cgroup has its warning line between them and the verdict.
    (limits, protected) = [line for line in lines if line.startswith(("limits:", "protections:"))]
    assert limits.startswith("limits: memory limit 1024 MiB, CPU limit 9 s per match, ")
    protections = machine_protections()
    assert protected.startswith("protections: limits in each process, ")
    assert ("no network" in protected.partition("not on this machine")[0]) is protections.network
    assert lines[-1].startswith("verdict: PASS; 12 matches in ")
    assert lines[-1].endswith(f"transcripts and logs in {keep}")
    assert len(list(keep.glob("*.json"))) == 12
    # The random player writes nothing on standard error: it leaves no log.
    assert not list(keep.glob("logs/*.log"))


def test_validate_command_fails_with_exit_1_and_json(tmp_path: Path) -> None:
    bot = f"{sys.executable} {MISBEHAVING} illegal"
    result = runner.invoke(app, ["validate", bot, "--games", "ticblock", "--json"])
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["verdict"] == "fail"
    assert report["matches"] == 6
    failed = [check["name"] for check in report["checks"] if check["verdict"] == "fail"]
    assert failed == ["legal moves"]
    assert report["limits"] == asdict(Limits())
    active = {row["protection"]: row["active"] for row in report["protections"]}
    assert active["pids cgroup"] is (machine_protections().cgroups is not None)


def test_validate_warns_where_only_the_address_space_limits_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # What validate reports of the machine, faked: this machine may have a memory cgroup.
    protections = replace(machine_protections(), memory=None)
    monkeypatch.setattr("referee.validate.run.machine_protections", lambda: protections)
    warning = (
        "memory is limited only by its address space, at twice memory_mb, and the sampling:"
        " a JVM, Go, .NET or Node program reserves more than it uses and may not start"
        " (no memory cgroup on this machine)"
    )
    args = ["validate", SAMPLE_BOT, "--games", "ticblock", "--matches-per-role", "1"]
    said = runner.invoke(app, args)
    assert said.exit_code == 0, said.output
    lines = said.stdout.splitlines()
    assert lines[-2] == f"warning: {warning}"
    assert lines[-3].startswith("protections: ")
    assert "not on this machine: memory limited by what it uses, memory cgroup" in lines[-3]
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["warnings"] == [warning]
    active = {row["protection"]: row["active"] for row in report["protections"]}
    assert not active["memory limited by what it uses"] and not active["memory cgroup"]


def test_validate_has_no_warning_where_a_memory_cgroup_limits_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    protections = replace(machine_protections(), memory=Path("/sys/fs/cgroup/faked"))
    monkeypatch.setattr("referee.validate.run.machine_protections", lambda: protections)
    args = ["validate", SAMPLE_BOT, "--games", "ticblock", "--matches-per-role", "1", "--json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["warnings"] == []
    assert protections.memory_warning == ""


def test_matches_the_rules_ended_are_said_in_one_line_and_warn(tmp_path: Path) -> None:
    # Blue has no legal move in the first state: no match gets past it, and the program,
    # which did nothing wrong, is not blamed; but nothing was checked either.
    args = ["validate", SAMPLE_BOT, "--games", str(HERE / "rulesheets" / "nolegal0.kif")]
    said = runner.invoke(app, args)
    assert said.exit_code == 0, said.output
    (line,) = [line for line in said.stdout.splitlines() if line.startswith("rules ")]
    assert line.split()[1] == "warn"
    # No answer to time: a consequence of the rules' fault, not a second warning.
    assert "verdict: PASS with warnings (rules); 6 matches in " in said.stdout
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["verdict"] == "warn"
    (rules,) = [check for check in report["checks"] if check["name"] == "rules"]
    assert rules["detail"] == (
        "6 of 6 matches ended by a fault of the rules, not of the program, and were not"
        " checked past it; the first: nolegal0, red, reused process, match 1: the rules fail"
        " at state 0 (the first state): nolegal0: fault of the rules: blue has no legal move"
        " in a state that is not terminal: state {(step 0)}"
    )
    assert rules["detail"] in line


@pytest.mark.usefixtures("quick_load")
@pytest.mark.slow
def test_a_state_past_its_limits_ends_matches_the_validation_blames_on_the_rules(
    tmp_path: Path,
) -> None:
    game = load_rulesheet(HERE / "rulesheets" / "exploding.kif", StateLimits(512, 3))
    report = asyncio.run(validate(player_spec(SAMPLE_BOT), [game], 1, QUICK, tmp_path))
    assert report.summary() == "PASS with warnings (rules)", report.checks
    (rules,) = [check for check in report.checks if check.name == "rules"]
    assert rules.detail.startswith(
        "4 of 4 matches ended by a fault of the rules, not of the program, and were not"
        " checked past it; the first: exploding, red, reused process, match 1: the rules fail"
        " at state 4 (after step 4): "
    ), rules.detail


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["random", "--games", "chess"], "unknown game 'chess'"),
        (["human"], "validate checks a program; a person cannot be validated"),
        (["'unclosed"], "cannot split command"),
        (["no-such-bot-anywhere --fast"], "command 'no-such-bot-anywhere' not found on PATH"),
    ],
)
def test_validate_bad_input(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["validate", *args])
    assert result.exit_code == 2
    assert message in result.stderr
    assert len(result.stderr.splitlines()) == 1


@pytest.mark.parametrize(
    ("source", "told"),
    [
        ("bot.go", "Go source, which must be built first: go build -o my-bot/bot my-bot/bot.go;"
         " then give ./my-bot/bot"),
        ("bot.c", "C source, which must be built first: cc -O2 -o my-bot/bot my-bot/bot.c;"
         " then give ./my-bot/bot"),
        ("bot.cpp", "C++ source, which must be built first: c++ -O2 -o my-bot/bot"
         " my-bot/bot.cpp; then give ./my-bot/bot"),
        ("bot.rs", "Rust source, which must be built first: rustc -O -o my-bot/bot"
         " my-bot/bot.rs; then give ./my-bot/bot"),
        ("Bot.java", "Java source, which must be built first: javac -d my-bot my-bot/Bot.java;"
         " then give java -cp my-bot Bot"),
    ],
)  # fmt: skip
def test_validate_of_a_source_file_says_how_to_build_it_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str, told: str
) -> None:
    # Named from where the author is, as they typed it, executable or not: never "chmod +x".
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my-bot").mkdir()
    path = tmp_path / "my-bot" / source
    path.write_text("// a bot\n")
    for mode in (0o644, 0o755):
        path.chmod(mode)
        result = runner.invoke(app, ["validate", f"my-bot/{source}"])
        assert result.exit_code == 2
        assert result.stderr == f"referee: error: my-bot/{source} is {told}\n"
    # In its own directory, named as a command on the PATH would be.
    monkeypatch.chdir(tmp_path / "my-bot")
    result = runner.invoke(app, ["validate", source])
    assert result.exit_code == 2
    assert "must be built first" in result.stderr and "chmod" not in result.stderr
    # A script with a #! line is a program whatever its name.
    path.write_text("#!/bin/sh\necho ready\n")
    assert build_first(path, tmp_path) is None


def test_a_file_or_a_bots_directory_named_as_a_command_is_told_what_to_give(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "slow.py").write_text("print('ready')\n")
    for language in ("python", "c"):
        made = runner.invoke(app, ["new-bot", language, f"{language}-bot"])
        assert made.exit_code == 0, made.output
    (tmp_path / "empty").mkdir()
    told = {
        "slow.py": "slow.py is a file here, not a command on the PATH: give ./slow.py (with a"
        " #! line and chmod +x) or python3 slow.py",
        "python-bot": "python-bot is a bot's directory, not a command: give the command its"
        " bot.yaml runs, from here: python3 python-bot/bot.py",
        "c-bot": "c-bot is a bot's directory, not a command: give the command its bot.yaml"
        " runs, from here, once built there (cc -O2 -o bot bot.c, in c-bot): ./c-bot/bot",
        "empty": "empty is a directory here, not a command: give the program in it to run",
    }
    for name, message in told.items():
        result = runner.invoke(app, ["validate", name])
        assert (result.exit_code, result.stderr) == (2, f"referee: error: {message}\n")
    # One message for every command that runs a player.
    result = runner.invoke(app, ["play", "quad", "-p", "x=slow.py", "-p", "o=random"])
    assert result.exit_code == 2
    assert result.stderr.endswith(f": {told['slow.py']}\n"), result.stderr


def test_a_program_dead_at_its_start_is_one_match_in_the_verdict(tmp_path: Path) -> None:
    bot = f"{sys.executable} {tmp_path / 'no_such_bot.py'}"
    result = runner.invoke(app, ["validate", bot, "--games", "ticblock"])
    assert result.exit_code == 1
    assert result.stdout.splitlines()[-1].startswith("verdict: FAIL (start); 1 match in ")


def test_an_early_stop_reports_the_checks_it_did_not_run_as_not_run(tmp_path: Path) -> None:
    # Dead at its first start: nothing after the start was put to the test, and the answers
    # it never gave are no second problem.
    bot = f"{sys.executable} {tmp_path / 'no_such_bot.py'}"
    result = runner.invoke(app, ["validate", bot, "--games", "ticblock", "--json"])
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["verdict"] == "fail"
    assert {check["name"]: check["verdict"] for check in report["checks"]} == {
        "start": "fail",
        "legal moves": "not run",
        "play clock": "not run",
        "clean output": "not run",
        "stays up": "not run",
        "limits": "not run",
        "reuse": "not run",
        "fresh start": "not run",
        "quit": "not run",
        "no leftovers": "not run",
        "rules": "pass",
        "response time": "not run",
        "stderr": "pass",
        "bounded": "pass",
    }
    said = runner.invoke(app, ["validate", bot, "--games", "ticblock"], env={"COLUMNS": "200"})
    for name in ("reuse", "response time"):
        assert re.search(rf"^{name} +not run +", said.stdout, re.MULTILINE), said.stdout
    assert "verdict: FAIL (start); 1 match in " in said.stdout
