"""Player specs: commands split without a shell, paths, and people."""

from __future__ import annotations

import pytest

from referee.errors import ConfigError
from referee.players.base import PlayerKind, PlayerSpec
from referee.players.builtin import PROGRAMS, player_spec, program_spec
from referee.players.log import PlayerLog


def test_a_shell_style_command_is_split_not_run_through_a_shell() -> None:
    spec = PlayerSpec.from_command("bot", "python3 'my bot.py' --depth 3 > out")
    assert spec.argv == ("python3", "my bot.py", "--depth", "3", ">", "out")


@pytest.mark.parametrize(("command", "message"), [("", "empty command"), ("'open", "cannot split")])
def test_bad_commands(command: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        PlayerSpec.from_command("bot", command)


def test_a_person_is_a_kind_of_player_not_a_command() -> None:
    person = player_spec("human")
    assert person.kind is PlayerKind.HUMAN and person.argv == ()
    assert person.command == ("human",)
    with pytest.raises(ConfigError, match=r"^nobody here$"):
        program_spec("human", "nobody here")


def test_the_built_in_programs_are_installed_with_the_package() -> None:
    spec = player_spec("mcts")
    assert spec.kind is PlayerKind.PROGRAM
    assert spec.argv[1] == str(PROGRAMS / "mcts_player.py")
    assert (PROGRAMS / "__init__.py").is_file()


@pytest.mark.parametrize(
    ("command", "problem"),
    [
        ("python3 nosuchbot.py", "no such file: nosuchbot.py"),
        ("node lib/missing.js --fast", "no such file: lib/missing.js"),
        ("no-such-interpreter-anywhere bot.py", "command 'no-such-interpreter-anywhere' not found"),
    ],
)
def test_a_missing_script_in_a_command_is_named_before_anything_runs(
    command: str, problem: str
) -> None:
    found = player_spec(command).missing_program()
    assert found is not None and found.startswith(problem), found


def test_a_script_that_exists_and_options_that_look_like_files_pass(tmp_path) -> None:
    (tmp_path / "bot.py").write_text("")
    spec = player_spec("python3 bot.py --config=tables.py -o out.js", base=tmp_path)
    assert spec.missing_program() is None


def test_a_held_log_keeps_what_came_up_to_its_cap_for_the_file_it_is_given(tmp_path) -> None:
    log = PlayerLog(None, limit=10)
    log.hold()
    log.write(b"started\n")
    log.write(b"and more than the cap\n")
    assert not list(tmp_path.iterdir())  # nothing is written while it is held
    assert log.full  # and a flood is read slowly, as into a file
    log.switch(tmp_path / "match.log")
    assert log.full
    log.write(b"x")
    log.close()
    cut = b"\n# referee: log cut at 10 bytes\n"
    assert (tmp_path / "match.log").read_bytes() == b"started\nan" + cut
    # A log never held and never written leaves no file.
    PlayerLog(tmp_path / "silent.log").close()
    assert not (tmp_path / "silent.log").exists()
