"""The command line, through typer's test runner: output and exit codes."""

from __future__ import annotations

import json
import re
import sys
import time
import tomllib
from collections import Counter
from importlib import metadata
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from referee.cli import app, main
from referee.games import GAMES, get_game
from tests.support.paths import ROOT, RULES

# Every transcript these tests write must replay and verify (issue: replay).
pytestmark = pytest.mark.usefixtures("every_transcript_verifies")

runner = CliRunner()


def test_games_table_lists_every_game_with_its_roles() -> None:
    result = runner.invoke(app, ["games"])
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["game", "roles", "description"]
    for game in GAMES.values():
        (row,) = [line for line in lines if line.startswith(game.id + " ")]
        assert ", ".join(game.roles) in row


def test_games_json() -> None:
    result = runner.invoke(app, ["games", "--json"])
    assert result.exit_code == 0
    rows = json.loads(result.stdout)
    assert [row["id"] for row in rows] == list(GAMES)
    assert rows[2]["roles"] == ["player1", "player2"]
    assert all(row["description"] for row in rows)


@pytest.mark.parametrize("game_id", list(GAMES))
def test_rules_explain_moves_with_an_example(game_id: str) -> None:
    result = runner.invoke(app, ["rules", game_id])
    assert result.exit_code == 0
    game = get_game(game_id)
    assert f"Roles, in order: {', '.join(game.roles)}" in result.stdout
    assert f"Example move: {game.example_move}" in result.stdout
    assert "Move" in result.stdout


@pytest.mark.parametrize(
    "command", [["rules", "chess"], ["random", "chess"], ["random", "chess", "--show"]]
)
def test_unknown_game_is_one_line_and_exit_2(command: list[str]) -> None:
    result = runner.invoke(app, command)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == (
        "referee: error: unknown game 'chess' (known: blocker-parallel, ticblock, hex-pie, "
        "double-tictactoe, quad; or the path of a .kif rulesheet)\n"
    )


@pytest.mark.parametrize("game_id", list(GAMES))
def test_random_game_replays_to_the_printed_goals(game_id: str) -> None:
    result = runner.invoke(app, ["random", game_id, "--seed", "5"])
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0] == f"{game_id}, seed 5"
    game = get_game(game_id)
    state = game.initial_state()
    for number, line in enumerate(lines[1:-1], start=1):
        prefix, _, body = line.partition(": ")
        assert prefix == f"step {number}"
        moves = dict(re.findall(r"(\w+) (\([^()]*\)|\w+)", body))
        state = game.next_state(state, tuple(game.parse_move(moves[role]) for role in game.roles))
    assert game.is_terminal(state)
    goals = ", ".join(
        f"{role} {goal}" for role, goal in zip(game.roles, game.goals(state), strict=True)
    )
    assert lines[-1] == f"goals: {goals} (after {len(lines) - 2} steps)"


def test_random_game_is_the_same_for_the_same_seed_and_shows_boards() -> None:
    first = runner.invoke(app, ["random", "quad", "--seed", "11", "--show"])
    second = runner.invoke(app, ["random", "quad", "--seed", "11", "--show"])
    assert first.exit_code == 0
    assert first.stdout == second.stdout
    steps = sum(line.startswith("step ") for line in first.stdout.splitlines())
    # One board before the first step and one after each step.
    assert first.stdout.count("c1 c2 c3 c4 c5 c6 c7") == steps + 1


def test_random_game_without_a_seed_prints_the_seed_it_chose() -> None:
    result = runner.invoke(app, ["random", "ticblock"])
    assert result.exit_code == 0
    seed = int(result.stdout.splitlines()[0].removeprefix("ticblock, seed "))
    again = runner.invoke(app, ["random", "ticblock", "--seed", str(seed)])
    assert again.stdout == result.stdout


def test_play_writes_a_transcript_and_prints_the_result(tmp_path) -> None:
    out = tmp_path / "m.json"
    result = runner.invoke(
        app,
        [
            "play",
            "ticblock",
            "-p",
            "xcplayer=random",
            "-p",
            "obplayer=random",
            "--out",
            str(out),
            "--show",
        ],
    )
    assert result.exit_code == 0, result.output
    transcript = json.loads(out.read_text())
    assert [seat["player"] for seat in transcript["seats"]] == ["random", "random"]
    lines = result.stdout.splitlines()
    goals = ", ".join(f"{role} {goal}" for role, goal in transcript["goals"].items())
    assert lines[-3] == f"result: {goals} (terminal after {len(transcript['steps'])} steps)"
    assert lines[-2] == f"transcript: {out}"
    public = (tmp_path / "signing.pub").read_text().strip()
    assert lines[-1] == (
        f"signing key: made {tmp_path / 'signing.key'} (keep it private);"
        f" public key {public} in {tmp_path / 'signing.pub'}"
    )
    assert sum(line.startswith("step ") for line in lines) == len(transcript["steps"])
    assert "tic-tac-toe (phase 1)" in result.stdout


def test_play_suggests_a_rulesheet_named_as_typed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Typed from a clone's top folder, `tictactoe` is the shipped rulesheet, not the built-in
    # game whose id happens to be nearest (double-tictactoe).
    (tmp_path / "matches" / "rulesheets").mkdir(parents=True)
    (tmp_path / "matches" / "rulesheets" / "tictactoe.kif").write_text("(role x)\n")
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["play", "TicTacToe", "-p", "a=random"])
    assert result.exit_code == 2
    assert "(did you mean matches/rulesheets/tictactoe.kif? known:" in result.stderr


def test_a_shipped_rulesheet_is_suggested_from_anywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["play", "blind-tictactoe", "-p", "a=random"])
    assert result.exit_code == 2
    shipped = ROOT / "referee" / "games" / "rulesheets" / "blind-tictactoe.kif"
    assert f"(did you mean {shipped}? known:" in result.stderr
    monkeypatch.chdir(ROOT)
    listed = runner.invoke(app, ["games"]).stdout.splitlines()
    assert "  referee/games/rulesheets/blind-tictactoe.kif" in listed
    assert "  matches/rulesheets/tictactoe.kif" in listed


# What `[LIMITS]` stands for in a command's summary (docs/commands.md says which).
LIMIT_OPTIONS = {
    "--memory-mb", "--cpu-s", "--processes", "--open-files", "--file-size-mb", "--disk-mb",
    "--state-memory-mb", "--state-seconds",
}  # fmt: skip


def test_the_docs_summary_of_each_command_names_every_option_it_has() -> None:
    text = (ROOT / "docs" / "commands.md").read_text(encoding="utf-8")
    section = text.split("## Every command")[1].split("\n## ")[0]
    summaries = [
        line
        for block in re.findall(r"```text\n(.*?)```", section, re.S)
        for line in block.splitlines()
    ]
    assert len(summaries) >= 20
    for line in summaries:
        words = line.split()
        command = words[1:3] if words[1] == "arena" else words[1:2]
        shown = runner.invoke(app, [*command, "--help"], terminal_width=200).stdout
        options = shown.partition("\nOptions:")[2]
        has = set(re.findall(r"^\s+(--[a-z][a-z-]*)", options, re.M)) - {"--help"}
        said = set(re.findall(r"--[a-z][a-z-]*", line))
        if "[LIMITS]" in line:
            said |= LIMIT_OPTIONS
        assert has <= said, f"docs/commands.md: {line.split(' [')[0]} lacks {sorted(has - said)}"


def test_every_help_example_names_files_that_are_there() -> None:
    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    named = 0
    for name in commands:
        text = runner.invoke(app, [name, "--help"], terminal_width=100).stdout
        examples = text.partition("Examples:")[2].split("\n\n")[0]
        for line in examples.splitlines():
            # A line is a command, or one continued by a trailing backslash: no run of
            # spaces inside it, which a docstring's swallowed line break leaves.
            assert "   " not in line.strip(), (name, line)
            for word in line.split():
                if "/" in word and word.endswith((".kif", ".yaml", ".jsonl")):
                    named += 1
                    assert list(ROOT.glob(word)), f"{name} --help names {word}, not shipped"
    assert named >= 3


@pytest.mark.parametrize(
    ("typed", "meant"), [("hexpie", "hex-pie"), ("Double-TicTacToe", "double-tictactoe")]
)
def test_play_suggests_the_nearest_game_name(typed: str, meant: str) -> None:
    result = runner.invoke(app, ["play", typed, "-p", "a=random"])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"referee: error: unknown game {typed!r} (did you mean {meant}? known: {', '.join(GAMES)};"
        " or the path of a .kif rulesheet)"
    ]
    far = runner.invoke(app, ["play", "chess", "-p", "a=random"])
    assert "did you mean" not in far.stderr


@pytest.mark.parametrize(
    ("players", "message"),
    [
        (["xcplayer=random"], "no player for role obplayer: add --player obplayer=PLAYER"),
        (["xcplayer=random", "x=random"], "--player 'x=random': ticblock has no role 'x'"),
        (
            ["xcplayer=random", "xcplayer=mcts"],
            "--player 'xcplayer=mcts': role xcplayer has a player already",
        ),
        (["xcplayer", "obplayer=random"], "--player 'xcplayer': expected ROLE=PLAYER"),
        (
            ["xcplayer=/no/such/bot", "obplayer=random"],
            "--player 'xcplayer=/no/such/bot': no such program: /no/such/bot",
        ),
        (["xcplayer='unclosed", "obplayer=random"], "cannot split command"),
    ],
)
def test_play_rejects_bad_players_in_one_line(tmp_path, players: list[str], message: str) -> None:
    args = ["play", "ticblock", "--out", str(tmp_path / "m.json")]
    for player in players:
        args += ["--player", player]
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert len(result.stderr.splitlines()) == 1
    assert message in result.stderr
    assert not (tmp_path / "m.json").exists()


def test_play_rejects_an_unwritable_transcript_path(tmp_path) -> None:
    (tmp_path / "file").write_text("")
    for out, message in [
        (tmp_path, "is a directory"),
        (tmp_path / "file" / "m.json", "cannot create"),
    ]:
        result = runner.invoke(
            app, ["play", "quad", "-p", "x=random", "-p", "o=random", "--out", str(out)]
        )
        assert result.exit_code == 2
        assert result.stderr.startswith(f"referee: error: {out}: {message}")
        assert len(result.stderr.splitlines()) == 1


def test_play_rejects_a_bad_clock(tmp_path) -> None:
    result = runner.invoke(
        app, ["play", "quad", "-p", "x=random", "-p", "o=random", "--play-clock", "0"]
    )
    assert result.exit_code == 2
    assert result.stderr == "referee: error: play clock must be a positive number of ms\n"


def test_human_player_is_asked_again_after_a_bad_move(tmp_path) -> None:
    out = tmp_path / "m.json"
    cells = [f"Mark{board} {m} {n}" for board in (1, 2) for m in (1, 2, 3) for n in (1, 2, 3)]
    # Bad text twice, then a good move, then the same cell again: taken, so not legal.
    moves = "\n".join(["(mark1 9 9)", "hello", cells[0], cells[0], *cells[1:]])
    result = runner.invoke(
        app,
        [
            "play",
            "double-tictactoe",
            "-p",
            "xplayer=human",
            "-p",
            "oplayer=random",
            "--out",
            str(out),
        ],
        input=moves + "\n",
    )
    assert result.exit_code == 0, result.output
    assert "'hello' is not a move of this game; type a number from 1 to 18" in result.stdout
    assert "'(mark1 9 9)' is not a move of this game; type a number" in result.stdout
    assert "(mark1 1 1) is not legal now; type moves to see the legal ones" in result.stdout
    transcript = json.loads(out.read_text())
    assert transcript["seats"][0]["player"] == "human"
    assert transcript["faults"] == []


@pytest.mark.slow
def test_sigterm_ends_the_players_and_records_the_match_as_aborted(tmp_path) -> None:
    import signal
    import subprocess
    import sys

    from tests.support.referees import bot_copy, running

    slow = bot_copy(tmp_path)
    out = tmp_path / "m.json"
    command = f"{sys.executable} {slow} child"
    referee = subprocess.Popen(
        [sys.executable, "-m", "referee", "play", "hex-pie", "-p", f"player1={command}",
         "-p", "player2=mcts", "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    # The signal must come once the match runs (its players started), not while the
    # referee still starts: a loaded machine may take far longer than an idle one to get
    # there, so the wait is long and is not passed by without a word.
    deadline = time.monotonic() + 120
    while len(running(slow)) < 2:
        assert time.monotonic() < deadline, "the player's two processes never ran"
        time.sleep(0.05)
    time.sleep(1.0)
    referee.send_signal(signal.SIGTERM)
    _, stderr = referee.communicate(timeout=20)
    assert referee.returncode == 130
    assert stderr == f"referee: error: interrupted; the match is recorded as aborted in {out}\n"
    assert json.loads(out.read_text())["end_reason"] == "aborted"
    assert running(slow) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["export", "t.json", "--format", "xml"], "referee export: Invalid value for '--format'"),
        (["play"], "referee play: Missing argument 'GAME'."),
        (["nosuch"], "referee: No such command 'nosuch'."),
        (["play", "quad", "--policy", "bad"], "referee play: Invalid value for '--policy'"),
        (["replay", "t.json", "--step", "x"], "referee replay: Invalid value for '--step'"),
        (["play", "--bogus"], "referee play: No such option: --bogus"),
        (["games", "--nope"], "referee games: No such option: --nope"),
        (["play", "ticblock", "-p"], "referee play: Option '-p' requires an argument."),
        (["arena", "serve", "d", "--bogus"], "referee arena serve: No such option: --bogus"),
    ],
)
def test_a_usage_error_is_one_line_with_the_command_and_exit_2(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    line = usage_error(args, capsys)
    assert line.startswith(f"referee: error: {message}"), line
    assert line.count("referee: error:") == 1, line
    assert line.endswith(f"(see {message.split(':')[0]} --help)")


def usage_error(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The one line on standard error of a command line refused with exit code 2."""
    with pytest.raises(SystemExit) as exited:
        main(args)
    assert exited.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    return line


def test_no_arguments_show_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main([])
    assert exited.value.code == 0
    shown = capsys.readouterr().out
    assert "Usage: referee [OPTIONS] COMMAND" in shown
    assert "conformance" in shown and "tournament" in shown


@pytest.mark.parametrize("group", [["arena"], ["arena", "author"]])
def test_a_group_without_its_command_shows_its_help(
    group: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(group)
    assert exited.value.code == 0
    shown = capsys.readouterr()
    assert shown.out.startswith(f"Usage: referee {' '.join(group)} [OPTIONS] COMMAND")
    assert shown.err == ""


COMMANDS = [name for name in ("", *(c.name for c in app.registered_commands)) if name is not None]


@pytest.mark.parametrize("command", COMMANDS, ids=[c or "referee" for c in COMMANDS])
def test_help_is_in_plain_words_with_an_example(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main([command, "--help"] if command else ["--help"])
    assert exited.value.code == 0
    shown = capsys.readouterr().out
    for python in ("<bool>", "<list[", "<int>", "<Path>", "<str>", "{", "x>="):
        assert python not in shown, (python, shown)
    assert "referee " in shown.partition("Example")[2] or not command, shown


@pytest.mark.parametrize("command", ["rules", "play"])
def test_help_lists_the_games_and_rulesheets(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert f"GAME The game: {', '.join(GAMES)}, or the path of a GDL rulesheet (.kif)." in shown


@pytest.mark.parametrize(
    ("args", "hint"),
    [
        (
            ["play", "ticblock", "--player", "xcplayer=python3", "bot.py", "-p", "obplayer=random"],
            "(a command with spaces must be quoted: --player 'xcplayer=python3 bot.py')",
        ),
        (
            ["validate", "python3", "bot.py", "--games", "quad"],
            "(a command with spaces must be quoted: validate 'python3 bot.py')",
        ),
        (
            ["play", "quad", "-p", "x=random", "o=random"],
            "(each role needs a --player of its own: --player ROLE=PLAYER --player ...)",
        ),
    ],
)
def test_a_command_split_by_the_shell_gets_a_hint_to_quote_it(
    args: list[str], hint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    line = usage_error(args, capsys)
    assert "Got unexpected extra argument" in line
    assert line.endswith(hint), line


MISBEHAVING_BOT = Path(__file__).resolve().parent / "players" / "misbehaving.py"


@pytest.mark.parametrize(
    ("bot", "reason"),
    [
        # Silent past the start clock, told what gives it more time.
        (
            f"{sys.executable} {MISBEHAVING_BOT} silent-start",
            "could not start: no answer within 1000 ms: answer ready sooner, or give it a"
            " longer start clock (--start-clock MS",
        ),
        # Dead at its start, with what it said quoted and the advice that fits it.
        (
            f"{sys.executable} /no_such_dir/no_such_bot.py",
            'could not start: exited with code 2 ("' + sys.executable + ": can't open file",
        ),
    ],
)
def test_play_with_a_seat_that_never_gets_ready_exits_1_with_one_line(
    tmp_path, bot: str, reason: str
) -> None:
    out = tmp_path / "m.json"
    args = ["play", "ticblock", "-p", f"xcplayer={bot}", "-p", "obplayer=random"]
    result = runner.invoke(app, [*args, "--start-clock", "1000", "--out", str(out)])
    assert result.exit_code == 1, result.output
    [line] = result.stderr.splitlines()
    assert line.startswith(f"referee: error: xcplayer ({bot}) could not start: "), line
    assert reason in line
    # A log is made when the program writes to it: this one's said why it could not start.
    logged = f"; its log: {tmp_path / 'm.xcplayer.log'}"
    assert line.endswith(logged) is ("exited" in reason)
    # The forfeit is a result: the match is recorded all the same.
    assert json.loads(out.read_text())["end_reason"] == "forfeit"


@pytest.mark.corpus
def test_play_names_a_role_in_the_case_its_rulesheet_spells_it(tmp_path: Path) -> None:
    # tictactoe2 spells its roles xPlayer and oPlayer; GDL's names are case-insensitive.
    out = tmp_path / "m.json"
    rules = str(RULES / "tictactoe2.kif")
    args = ["play", rules, "-p", "xPlayer=random", "-p", "OPLAYER=random", "--out", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert [seat["role"] for seat in json.loads(out.read_text())["seats"]] == ["xplayer", "oplayer"]


@pytest.mark.parametrize("columns", [60, 200])
@pytest.mark.parametrize(
    "args",
    [["doctor"], ["games"], ["validate", f"{sys.executable} -c 'import sys'", "--games", "quad"]],
    ids=["doctor", "games", "validate"],
)
def test_tables_fit_the_terminal(args: list[str], columns: int) -> None:
    wide = runner.invoke(app, args, env={"COLUMNS": "100000"})
    fitted = runner.invoke(app, args, env={"COLUMNS": str(columns)})
    assert fitted.exit_code == wide.exit_code, fitted.output
    # The tables, and the prose around them (validate's limits and protections).
    assert all(len(line) <= columns for line in fitted.stdout.splitlines()), fitted.stdout
    # Wrapped or listed, not cut: every character of the wide table is there.
    missing = characters(wide.stdout) - characters(fitted.stdout)
    assert set(missing) <= {"-"}, (missing, wide.stdout, fitted.stdout)


def characters(output: str) -> Counter[str]:
    """The characters of a command's output, but for spaces and the time a verdict took."""
    kept = [line for line in output.splitlines() if not line.startswith("verdict:")]
    return Counter("".join("".join(kept).split()))


def test_a_table_too_narrow_to_wrap_is_a_list_and_json_is_not_wrapped() -> None:
    listed = runner.invoke(app, ["doctor"], env={"COLUMNS": "40"})
    assert listed.exit_code == 0
    blocks = listed.stdout.strip().split("\n\n")
    assert blocks[0].splitlines()[:2] == ["protection: limits in each process", "active: yes"]
    assert all(block.startswith("protection: ") for block in blocks)
    as_json = runner.invoke(app, ["doctor", "--json"], env={"COLUMNS": "40"})
    assert json.loads(as_json.stdout) and max(map(len, as_json.stdout.splitlines())) > 40


@pytest.mark.parametrize("option", ["--version", "-V"])
def test_the_version_is_the_one_installed(option: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main([option])
    assert exited.value.code == 0
    # pyproject.toml takes the version from the package, so what pip installed is what prints.
    project = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "referee.__version__"}
    assert capsys.readouterr().out == f"referee {metadata.version('referee')}\n"


def test_the_completion_script_is_shown_for_the_shell_named(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Typer's switch from the shell it detects to the one named.
    monkeypatch.setenv("_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION", "1")
    with pytest.raises(SystemExit) as exited:
        main(["--show-completion", "bash"])
    assert exited.value.code == 0
    script = capsys.readouterr().out
    assert "_REFEREE_COMPLETE=complete_bash" in script
    assert script.strip().endswith("complete -o default -F _referee_completion referee")


@pytest.mark.parametrize(
    ("words", "completed"),
    [
        ("referee pl", "play"),
        ("referee play --po", "--policy\n--ponder"),
        ("referee arena a", "author"),
    ],
)
def test_the_shell_completes_commands_and_options(
    words: str, completed: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # What the script above asks of `referee` at each tab.
    monkeypatch.setenv("_REFEREE_COMPLETE", "complete_bash")
    monkeypatch.setenv("COMP_WORDS", words)
    monkeypatch.setenv("COMP_CWORD", str(len(words.split()) - 1))
    with pytest.raises(SystemExit) as exited:
        main([])
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == completed
