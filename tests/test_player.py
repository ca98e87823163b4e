"""Player specs: commands split without a shell, paths, and people; a connection's late
answers, counted and dropped."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from referee.errors import ConfigError, PlayerCrashed
from referee.players.base import PlayerKind, PlayerSpec
from referee.players.builtin import PROGRAMS, player_spec, program_spec
from referee.players.connection import HELD_LIMIT_BYTES, STDOUT
from referee.players.log import PlayerLog
from tests.support.fakes import Answer, Script, scripted


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


def test_a_record_names_a_programs_own_files_from_its_directory(tmp_path: Path) -> None:
    bot = tmp_path / "arena" / "bots" / "12"
    (bot / "lib").mkdir(parents=True)
    for name in ("bot", "bot.py", "lib/data.bin"):
        (bot / name).write_text("")
    spec = PlayerSpec.from_command("b", "./bot --data lib/data.bin -cp .", cwd=bot)
    # Run from where it is, recorded as its author wrote it.
    assert spec.argv == (str(bot / "bot"), "--data", str(bot / "lib/data.bin"), "-cp", str(bot))
    assert spec.recorded == ("./bot", "--data", "lib/data.bin", "-cp", ".")
    script = PlayerSpec.from_command("b", "/usr/bin/python3 bot.py --fast", cwd=bot)
    assert script.recorded == ("/usr/bin/python3", "bot.py", "--fast")
    # Without a directory of its own, a program's files are named as it runs them.
    alone = PlayerSpec.from_command("b", "python3 bot.py", base=bot)
    assert alone.recorded == alone.argv == ("python3", str(bot / "bot.py"))
    assert player_spec("human").recorded == ("human",)


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


def test_a_match_played_again_has_its_own_log_not_the_aborted_ones_too(tmp_path) -> None:
    # A match aborted by a stop is played again under the same name: its log is the new
    # attempt's alone, within its cap, as its transcript is.
    (tmp_path / "match.log").write_bytes(b"the aborted attempt\n")
    log = PlayerLog(tmp_path / "match.log")
    log.write(b"played again\n")
    log.note("a note")
    log.close()
    assert (tmp_path / "match.log").read_bytes().splitlines() == [
        b"played again",
        b"# referee: a note",
    ]


# A late answer in the tests below comes three clocks after its request: far past its clock,
# and ordered against the other timers of the scripted player whatever the machine's load.
CLOCK_S = 0.05


def go(step: int) -> str:
    return f"go {step} {round(CLOCK_S * 1000)} (a) (b) (c)"


def late_then_prompt(late: set[int], after_s: float = 0.0) -> Script:
    """Answers `go N` with `(mark N)`: three clocks late at the steps in `late`, else after
    `after_s`."""

    def answer(line: str) -> list[Answer | str]:
        step = int(line.split()[1])
        delay = 3 * CLOCK_S if step in late else after_s
        return [Answer(f"(mark {step})", delay_s=delay)]

    return answer


def test_two_late_answers_in_a_row_are_both_dropped_and_the_third_is_taken() -> None:
    player, transport = scripted("late", late_then_prompt({1, 2}))
    connection = player.connection

    async def scenario() -> None:
        assert await connection.request(go(1), CLOCK_S) is None
        assert await connection.request(go(2), CLOCK_S) is None
        assert connection.owed == 2
        # Both late answers are written before the third request: each pays one line owed.
        await asyncio.sleep(6 * CLOCK_S)
        reply = await connection.request(go(3), 10 * CLOCK_S)
        assert reply is not None and reply.text == "(mark 3)"
        assert connection.owed == 0

    asyncio.run(scenario())
    assert transport.written == [go(1), go(2), go(3)]
    # Each is timed from its request; the second, read with the first, took none of its own
    # after the first came.
    first, second = connection.late_answers
    assert (first.request, second.request) == ("go 1", "go 2")
    assert first.own_s == first.took_s >= 3 * CLOCK_S
    assert second.own_s == 0 < second.took_s


def test_an_answer_read_after_its_time_before_its_timer_ran_is_timed_as_late() -> None:
    # A busy event loop may read an answer past its request's time before the timer that
    # ends the request runs: it is the answer, and late, and its own time counts from the
    # answer read before it, as a dropped late answer's does.
    player, transport = scripted("silent", lambda line: [])
    connection = player.connection

    async def scenario() -> None:
        asking = asyncio.create_task(connection.request(go(1), CLOCK_S))
        while transport.written != [go(1)]:
            await asyncio.sleep(0)
        time.sleep(2 * CLOCK_S)  # the loop held past the time, its timer not yet run
        connection.pipe_data_received(STDOUT, b"(mark 1)\n")
        reply = await asking
        assert reply is not None and reply.elapsed_ms > CLOCK_S * 1000

    asyncio.run(scenario())
    (late,) = connection.late_answers
    assert late.request == "go 1" and late.own_s == late.took_s >= 2 * CLOCK_S


def test_a_late_answer_that_comes_while_the_next_is_awaited_is_dropped_not_taken() -> None:
    # The late line to `go 1` comes at 3 clocks, the answer to `go 2` at 5: after it.
    player, _ = scripted("late", late_then_prompt({1}, after_s=4 * CLOCK_S))
    connection = player.connection

    async def scenario() -> None:
        assert await connection.request(go(1), CLOCK_S) is None
        reply = await connection.request(go(2), 20 * CLOCK_S)
        assert reply is not None and reply.text == "(mark 2)"
        assert connection.owed == 0

    asyncio.run(scenario())
    (late,) = connection.late_answers
    assert late.request == "go 1" and late.own_s == late.took_s >= 3 * CLOCK_S


def test_a_line_begun_in_time_and_never_ended_owes_nothing() -> None:
    def broken(line: str) -> list[Answer | str]:
        return [Answer("(mark", newline=False)] if line == go(1) else ["(mark 2)"]

    player, _ = scripted("broken", broken)

    async def scenario() -> None:
        assert await player.connection.request(go(1), CLOCK_S) is None
        assert player.connection.owed == 0
        reply = await player.connection.request(go(2), 10 * CLOCK_S)
        assert reply is not None and reply.text == "(mark 2)"

    asyncio.run(scenario())


def test_a_drain_takes_the_late_answers_owed_and_drops_what_nobody_asked_for() -> None:
    def late_and_chatty(line: str) -> list[Answer | str]:
        late = Answer("(mark 1)\ngossip", delay_s=1.5 * CLOCK_S)
        return [late] if line.startswith("go ") else []

    player, _ = scripted("late", late_and_chatty)
    connection = player.connection

    async def scenario() -> None:
        assert await connection.request(go(1), CLOCK_S) is None
        connection.post("end 0 100 terminal", 1.0)
        # The late answer has one more clock to come, from the drain's start: it comes half a
        # clock after the timeout. The stray line after it is read too.
        assert await connection.drained(10.0)
        assert connection.owed == 0

    asyncio.run(scenario())
    assert connection.strays["end"].count == 1 and connection.strays["end"].last == "gossip"


def test_a_drain_gives_a_late_answer_that_never_comes_one_more_clock_and_no_more() -> None:
    def silent(line: str) -> list[Answer | str]:
        return []

    player, _ = scripted("silent", silent)
    connection = player.connection

    async def scenario() -> float:
        assert await connection.request(go(1), CLOCK_S) is None
        began = asyncio.get_running_loop().time()
        assert not await connection.drained(600.0)
        assert connection.owed == 1
        return asyncio.get_running_loop().time() - began

    # The wait is bounded by the clock of the request owed, not by the drain's 600 s.
    assert asyncio.run(scenario()) < 60


def test_a_late_answer_written_after_quit_is_taken_as_it_comes_and_timed() -> None:
    late_at_1 = late_then_prompt({1})
    player, _ = scripted("late", lambda line: late_at_1(line) if line.startswith("go ") else [])
    connection = player.connection

    async def scenario() -> None:
        assert await connection.request(go(1), CLOCK_S) is None
        connection.post("quit", 1.0)
        # Its grace to exit: the late answer comes two clocks into it, and is read then.
        await connection.owed_answers(600.0)
        assert connection.owed == 0

    asyncio.run(scenario())
    (late,) = connection.late_answers
    assert late.request == "go 1" and late.own_s == late.took_s >= 3 * CLOCK_S
    # Still among what it wrote after quit, which tells a program that held back its lines.
    assert (connection.strays["quit"].count, connection.strays["quit"].last) == (1, "(mark 1)")


def _chatty(gone: bool) -> Script:
    """Answers `go N` with `(mark N)` at once; after the first, writes a line nobody asked
    for a clock later, and then ends if `gone`."""

    def answer(line: str) -> list[Answer | str]:
        step = int(line.split()[1])
        if step > 1:
            return [f"(mark {step})"]
        after = [Answer(crash="exited with code 1", delay_s=CLOCK_S)] if gone else []
        return [f"(mark {step})", Answer("gossip", delay_s=CLOCK_S), *after]

    return answer


def test_a_line_written_unasked_is_kept_for_the_next_request_then_output_waits_to_be_asked() -> (
    None
):
    player, transport = scripted("chatty", _chatty(gone=False))
    connection = player.connection

    async def scenario() -> None:
        reply = await connection.request(go(1), 10 * CLOCK_S)
        assert reply is not None and reply.text == "(mark 1)"
        # It has written only when asked: its output is still read.
        assert transport._reading
        await asyncio.sleep(3 * CLOCK_S)
        assert not transport._reading
        assert connection.strays == {}, "taken in before the next request, as from its pipe"
        reply = await connection.request(go(2), 10 * CLOCK_S)
        assert reply is not None and reply.text == "(mark 2)"
        assert connection.strays["go"].count == 1 and connection.strays["go"].last == "gossip"
        assert not transport._reading, "read only when asked, from now on"

    asyncio.run(scenario())


def test_a_line_written_unasked_by_a_player_that_then_ends_is_taken_in() -> None:
    player, _ = scripted("chatty", _chatty(gone=True))
    connection = player.connection

    async def scenario() -> None:
        await connection.request(go(1), 10 * CLOCK_S)
        await asyncio.sleep(4 * CLOCK_S)

    asyncio.run(scenario())
    assert connection.gone is not None
    assert connection.strays["go"].count == 1 and connection.strays["go"].last == "gossip"


def _moves_then_go(line: str) -> list[Answer | str]:
    """Answers `go N` at once with `(mark N)`, and nothing else."""
    return [f"(mark {line.split()[1]})"] if line.startswith("go ") else []


def test_a_held_line_goes_out_with_the_next_line_written_in_one_write() -> None:
    player, transport = scripted("held", _moves_then_go)
    connection = player.connection
    writes: list[bytes] = []
    write = transport.write

    def counted(data: bytes | bytearray | memoryview) -> None:
        writes.append(bytes(data))
        write(data)

    transport.write = counted  # type: ignore[method-assign]

    async def scenario() -> None:
        assert connection.hold("moves 1 (a) noop") and connection.hold("moves 2 noop (b)")
        assert writes == [], "held: the player is not woken for lines that need no answer"
        reply = await connection.request(go(3), 10 * CLOCK_S)
        assert reply is not None and reply.text == "(mark 3)"
        assert writes == [f"moves 1 (a) noop\nmoves 2 noop (b)\n{go(3)}\n".encode()]
        connection.hold("moves 3 (c) noop")
        connection.flush()
        assert writes[-1] == b"moves 3 (c) noop\n", "written at once, alone"
        connection.flush()
        connection.hold("end 100 0 terminal")
        await connection.send("quit", CLOCK_S)
        assert writes[-2:] == [b"moves 3 (c) noop\n", b"end 100 0 terminal\nquit\n"]

    asyncio.run(scenario())
    assert transport.written[-2:] == ["end 100 0 terminal", "quit"]


def test_lines_are_held_up_to_their_limit_and_not_for_a_player_gone() -> None:
    player, _ = scripted("held", _moves_then_go)
    connection = player.connection
    line = "moves 1 " + "x" * 1000

    async def scenario() -> None:
        held = 0
        while connection.hold(line):
            held += 1
        assert held == HELD_LIMIT_BYTES // (len(line) + 1)
        connection.fail(PlayerCrashed("exited with status 1"))
        with pytest.raises(PlayerCrashed):
            connection.hold("moves 2 (a) (b)")

    asyncio.run(scenario())
