"""The mistakes bot authors make: each real program in tests/players/mistakes/ fails its
check under validation, with the known cause named and the advice that fixes it; and the
validation stops as soon as the verdict is certain."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from referee.clock import Clocks
from referee.errors import FaultKind
from referee.games import get_game
from referee.players.base import PlayerSpec
from referee.players.trace import Trace
from referee.sandbox.isolation import machine_protections
from referee.validate import Check, Report, Verdict, validate
from referee.validate.checks import checks
from referee.validate.evidence import Evidence, Late, Offence, Process
from referee.validate.mistakes import Language, Mistake, advice, language
from referee.validate.text import report_text
from tests.support.facilities import missing
from tests.support.pyenv import PyenvShim

# Every transcript these tests write must replay and verify (issue: replay).
pytestmark = pytest.mark.usefixtures("every_transcript_verifies")

MISTAKES = Path(__file__).resolve().parent / "players" / "mistakes"
# Clocks no answer of a working bot comes near, even on a loaded machine.
QUICK = Clocks(start_ms=5_000, play_ms=1_000)


def run(argv: list[str], tmp_path: Path, thorough: bool = False, game: str = "ticblock") -> Report:
    spec = PlayerSpec("submitted", tuple(argv))
    games = [get_game(game)]
    return asyncio.run(validate(spec, games, 2, QUICK, tmp_path / "work", thorough=thorough))


def failing(report: Report) -> dict[str, Check]:
    return {check.name: check for check in report.checks if check.verdict is Verdict.FAIL}


def needs(program: str) -> str:
    found = shutil.which(program)
    if found is None:
        missing(
            f"{program} is not installed on this machine",
            under_ci=f"CI installs {program} (.ci/run)",
        )
    return found


def compiled(tmp_path: Path, *flags: str) -> str:
    binary = tmp_path / "bot"
    subprocess.run(
        [needs("cc"), *flags, "-o", str(binary), str(MISTAKES / "unflushed.c")], check=True
    )
    return str(binary)


@pytest.mark.slow
def test_a_c_bot_that_never_flushes_is_told_to_flush_and_stopped_after_one_start(
    tmp_path: Path,
) -> None:
    report = run([compiled(tmp_path)], tmp_path)
    start = failing(report)["start"]
    assert start.cause is Mistake.UNFLUSHED_OUTPUT
    assert "until it was told to quit, and then what it had held back ('ready')" in start.detail
    assert start.advice.startswith("flush standard output after each line")
    assert "fflush(stdout)" in start.advice
    # A silent start decides it (its ready, awaited a while longer, never came): the five
    # other matches are not played.
    assert (report.matches, report.skipped) == (1, 5)
    assert "did not answer its first start within the start clock; --thorough plays" in (
        report.stopped
    )


def test_the_same_c_bot_flushing_passes(tmp_path: Path) -> None:
    report = run([compiled(tmp_path, "-DFLUSH")], tmp_path)
    assert report.verdict is not Verdict.FAIL, failing(report)


@pytest.mark.slow
def test_an_awk_bot_without_interactive_input_is_told_about_buffered_input(
    tmp_path: Path,
) -> None:
    report = run([needs("mawk"), "-f", str(MISTAKES / "buffered.awk")], tmp_path)
    start = failing(report)["start"]
    assert start.cause is Mistake.BUFFERED_INPUT
    assert "did not exit on quit either" in start.detail
    assert "mawk -W interactive" in start.advice
    assert report.matches == 1


def test_the_same_awk_bot_with_interactive_input_passes(tmp_path: Path) -> None:
    argv = [needs("mawk"), "-W", "interactive", "-f", str(MISTAKES / "buffered.awk")]
    report = run(argv, tmp_path)
    assert report.verdict is not Verdict.FAIL, failing(report)


def test_debug_text_on_standard_output_is_sent_to_standard_error(tmp_path: Path) -> None:
    report = run([sys.executable, str(MISTAKES / "debug_print.py")], tmp_path)
    output = failing(report)["clean output"]
    assert output.detail.startswith(
        "ticblock, xcplayer, step 1: answered 'thinking, legal moves: 9', which is not a move"
    )
    assert output.cause is Mistake.DEBUG_ON_STDOUT
    assert "standard error (print(..., file=sys.stderr)), or begin the line with #" in (
        output.advice
    )


# In blocker-parallel both roles move at every step: the late first answer comes while the
# second move's clock runs.
@pytest.mark.parametrize("game", ["ticblock", "blocker-parallel"])
@pytest.mark.slow
def test_a_slow_first_move_is_told_to_set_up_before_ready(tmp_path: Path, game: str) -> None:
    report = run([sys.executable, str(MISTAKES / "slow_first_move.py")], tmp_path, game=game)
    late = failing(report)["play clock"]
    assert late.detail.startswith(f"{game}, {get_game(game).roles[0]}, step 1: no answer within")
    assert "in each match, the first late answer was its first move" in late.detail
    assert late.cause is Mistake.SETUP_AFTER_READY
    assert "before you answer ready: the start clock gives 5000 ms, a move only 1000 ms" in (
        late.advice
    )
    assert set(failing(report)) == {"play clock"}
    # Its late first moves are timed with the rest, by the time it took for each.
    times = {c.name: c for c in report.checks}["response time"]
    assert re.search(r"max 1[5-9]\d\d ms of 1000 ms \(\d+ moves, [1-9]\d* late\)", times.detail), (
        times.detail
    )


# Clocks the slow bots are late for by their own sleeps, however loaded the machine: a
# sleep is never shorter than asked. Small, for quick matches.
SLOW_CLOCKS = Clocks(start_ms=2_000, play_ms=200)


@pytest.fixture(scope="module")
def slow_moves_go(tmp_path_factory: pytest.TempPathFactory) -> str:
    """tests/players/mistakes/slow_moves.go, built."""
    here = tmp_path_factory.mktemp("go")
    here.chmod(0o755)  # a root referee's players run as users of their own
    binary = here / "slow_moves"
    # Go keeps its build cache in HOME; the test's own, not the developer's.
    env = {**os.environ, "GOCACHE": str(here / "cache"), "GOPATH": str(here / "gopath")}
    build = [needs("go"), "build", "-o", str(binary), str(MISTAKES / "slow_moves.go")]
    subprocess.run(build, check=True, capture_output=True, env=env)
    return str(binary)


def slow_moves(language: str, request: pytest.FixtureRequest) -> list[str]:
    """The command of the bot of tests/players/mistakes/slow_moves.*, in `language`."""
    if language == "go":
        if not machine_protections().memory_by_cgroup:
            # Under an address-space limit alone, the Go runtime's reservations do not fit.
            missing("no memory cgroup on this machine: a Go program cannot start in the seat")
        return [request.getfixturevalue("slow_moves_go")]
    return [sys.executable, str(MISTAKES / "slow_moves.py")]


def run_slow(argv: list[str], tmp_path: Path) -> Report:
    """A validation at SLOW_CLOCKS, one match per process, in double-tictactoe, in which a
    player is asked for fewest moves."""
    spec = PlayerSpec("submitted", tuple(argv))
    game = get_game("double-tictactoe")
    return asyncio.run(validate(spec, [game], 1, SLOW_CLOCKS, tmp_path / "work"))


@pytest.mark.parametrize("language", ["python", "go"])
@pytest.mark.slow
def test_a_bot_late_at_every_move_is_told_its_time_and_the_share_to_answer_in(
    tmp_path: Path, request: pytest.FixtureRequest, language: str
) -> None:
    # 220 ms of a 200 ms clock at every move: every answer is late, by about a tenth.
    report = run_slow([*slow_moves(language, request), "1.1"], tmp_path)
    assert set(failing(report)) == {"play clock"}, failing(report)
    late = failing(report)["play clock"]
    assert late.cause is Mistake.SLOW_MOVES
    took = re.search(r"every answer took about (\d+) ms of 200\b", late.detail)
    assert took is not None, late.detail
    assert int(took[1]) >= 220
    assert late.advice.startswith("think less for each move, or stop by the clock: aim to")
    assert "answer within 80% of the play clock (160 ms of 200)" in late.advice
    text = report_text(report, None)
    assert "set-up" not in text and "before you answer ready" not in text
    assert "first move" not in late.detail
    # The late answers are timed, not left out: each by its own time.
    times = {c.name: c for c in report.checks}["response time"]
    assert times.verdict is Verdict.WARN
    median = re.match(r"median (\d+) ms, ", times.detail)
    assert median is not None and int(median[1]) >= 220, times.detail
    moves = re.search(r"\((\d+) moves, (\d+) late", times.detail)
    assert moves is not None and moves[1] == moves[2], times.detail


@pytest.mark.parametrize("language", ["python", "go"])
def test_a_bot_late_at_some_moves_is_told_which_and_timed_with_them(
    tmp_path: Path, request: pytest.FixtureRequest, language: str
) -> None:
    # Three clocks at its second move of each match (step 3: xplayer moves at odd steps),
    # at once at the others: the move after it is late only as it is still busy.
    report = run_slow([*slow_moves(language, request), "3", "2"], tmp_path)
    assert set(failing(report)) == {"play clock"}, failing(report)
    late = failing(report)["play clock"]
    assert late.detail.startswith("double-tictactoe, xplayer, step 3: no answer within 200 ms")
    assert late.cause is Mistake.LATE_AT_SOME_MOVES
    assert re.search(
        r"late of itself at 2 of \d+ moves, in 2 matches: at step 3 \(2 times\)", late.detail
    )
    slowest = re.search(r"; the slowest answer took (\d+) ms of 200", late.detail)
    assert slowest is not None and int(slowest[1]) >= 600, late.detail
    assert "more late only as it was still busy with one before" in late.detail
    assert "answer with the best move found so far by 80% of the play clock (160 ms" in (
        late.advice
    )
    assert "before you answer ready" not in late.advice
    times = {c.name: c for c in report.checks}["response time"]
    highest = re.search(r"max (\d+) ms of 200 ms \(\d+ moves, \d+ late\)", times.detail)
    assert highest is not None and int(highest[1]) >= 600, times.detail


@pytest.mark.slow
def test_a_quit_while_still_busy_with_a_late_move_is_a_consequence_not_a_fault(
    tmp_path: Path,
) -> None:
    # 30 clocks (6 s) at its second move: the match ends, and quit comes, while it sleeps.
    report = run_slow([sys.executable, str(MISTAKES / "slow_moves.py"), "30", "2"], tmp_path)
    assert set(failing(report)) == {"play clock"}, failing(report)
    late = failing(report)["play clock"]
    assert late.cause is Mistake.LATE_AT_SOME_MOVES
    assert "at step 3 (2 times)" in late.detail
    assert re.search(r"; the answer to \d+ moves never came; ", late.detail), late.detail
    assert (
        "2 processes still busy with a late answer did not exit within 1000 ms of quit: a"
        " consequence of its late answers, not a fault of its own"
    ) in late.detail
    checks = {c.name: c for c in report.checks}
    # Neither process could be told to quit but while it was busy: quit was not put to the test.
    assert (checks["quit"].verdict, checks["quit"].detail) == (
        Verdict.NOT_RUN,
        "each process told to quit was still busy with a late answer",
    )
    # A move never answered is timed as over the clock and every answer measured (here only
    # prompt ones): the slowest, and the maximum never below the 95th percentile.
    assert "95th percentile over 200 ms, max over 200 ms of 200 ms" in (
        checks["response time"].detail
    )
    assert "of them never answered)" in checks["response time"].detail


@pytest.mark.slow
def test_a_reused_process_still_owing_late_answers_is_replaced_and_they_are_timed(
    tmp_path: Path,
) -> None:
    # 500 ms of a 200 ms clock at every move: it falls further behind with each, and owes
    # at least two answers when a match ends, which come 500 ms apart. One more clock after
    # the match cannot bring both: a fresh process plays the next match, as in a tournament,
    # and the answers still to come are read, timed, after quit.
    spec = PlayerSpec("submitted", (sys.executable, str(MISTAKES / "slow_moves.py"), "2.5"))
    trace = Trace(tmp_path / "t.trace")
    try:
        report = asyncio.run(
            validate(
                spec, [get_game("double-tictactoe")], 2, SLOW_CLOCKS, tmp_path / "w", trace=trace
            )
        )
    finally:
        trace.close()
    late = failing(report)["play clock"]
    assert "1 process still owed late answers a play clock after a match ended, and a fresh" in (
        late.detail
    )
    checks = {c.name: c for c in report.checks}
    assert checks["reuse"].verdict is Verdict.NOT_RUN
    assert "was replaced by a fresh one" in checks["reuse"].detail
    lines = (tmp_path / "t.trace").read_text().splitlines()
    sent = [line.split(" > ")[1] for line in lines if " > " in line]
    # The first process is told to quit before the second match starts.
    ends = [i for i, line in enumerate(sent) if line.startswith(("end ", "quit", "start "))]
    assert [sent[i].split()[0] for i in ends][:4] == ["start", "end", "quit", "start"]
    after_quit = [line for line in lines if line.endswith("after quit: dropped")]
    assert after_quit, lines
    assert not [line for line in lines if "nobody asked for it" in line]
    # Every late answer that came, after its match ended or after quit too, is timed: only
    # those that never came are "never answered".
    came = [line for line in lines if "# the late answer to an earlier request" in line]
    detail = checks["response time"].detail
    told = re.search(r"\(\d+ moves, (\d+) late(?:, (\d+) of them never answered)?\)", detail)
    assert told is not None, detail
    assert int(told[1]) - int(told[2] or 0) == len(came), (detail, came)


def test_a_bot_that_answers_start_with_another_word_is_told_to_answer_ready(
    tmp_path: Path,
) -> None:
    report = run([sys.executable, str(MISTAKES / "says_ok.py")], tmp_path)
    start = failing(report)["start"]
    assert start.detail.startswith("ticblock, xcplayer, reused process: answered 'ok' instead")
    assert start.cause is Mistake.NOT_READY
    assert start.advice.startswith("answer `start` with the line `ready`, that word alone")
    assert "print(..., flush=True)" in start.advice
    # How to fix it comes first in the report, as validate prints it and the arena shows it.
    assert report_text(report, None).startswith(
        f"how to fix start (answering start with something else): {start.advice}\n"
    )


def test_a_bot_that_crashes_on_end_is_told_to_wait_for_start_or_quit(tmp_path: Path) -> None:
    report = run([sys.executable, str(MISTAKES / "exits_on_end.py")], tmp_path)
    failed = failing(report)
    # One cause, named the same in both checks it fails, and nowhere else.
    assert set(failed) == {"stays up", "reuse"}
    crash = failed["stays up"]
    assert crash.detail.startswith("ticblock, xcplayer: exited after match 1 ended: exited with")
    assert "only in a reused process, from its second match on" in crash.detail
    assert crash.cause is failed["reuse"].cause is Mistake.EXIT_ON_END
    assert crash.stderr[-1] == "ValueError: invalid literal for int() with base 10: 'terminal'"


def test_answering_moves_is_blamed_on_the_lines_not_on_a_step(tmp_path: Path) -> None:
    report = run([sys.executable, str(MISTAKES / "answers_moves.py")], tmp_path)
    output = failing(report)["clean output"]
    assert output.detail.startswith("ticblock, xcplayer, match 1: ")
    assert "nobody asked for" in output.detail
    # Which request the strays follow depends on timing: an 'ok' that comes after the next
    # `go` is written is taken for its answer, and the move after it is the stray. The
    # diagnosis must name the acknowledgements whichever way it went.
    assert "it wrote 'ok' after " in output.detail
    assert "lines, which need no answer" in output.detail
    assert output.cause is Mistake.ANSWERS_NO_ANSWER
    assert "write nothing in reply to `moves` and `end`" in output.advice


def test_thorough_plays_every_match_of_a_failing_program(tmp_path: Path) -> None:
    bot = [sys.executable, str(MISTAKES / "answers_moves.py")]
    quick, thorough = run(bot, tmp_path / "quick"), run(bot, tmp_path / "all", thorough=True)
    assert (quick.matches, quick.skipped) == (2, 4)
    assert "failed clean output in each of its first 2 matches" in quick.stopped
    assert (thorough.matches, thorough.skipped, thorough.stopped) == (6, 0, "")
    # An 'ok' that comes after the next `go` is written is taken for its move (see above),
    # and the move that follows it for the answer to the go after, where it may no longer be
    # legal: on a loaded machine, more likely in six matches than in two. Every other check
    # fails alike in both.
    found = [set(failing(report)) - {"legal moves"} for report in (quick, thorough)]
    assert found[0] == found[1] == {"clean output"}


def test_every_mistake_has_advice_of_its_own_in_every_language() -> None:
    for program in Language:
        texts = [advice(mistake, program, 10_000, 1_000) for mistake in Mistake]
        assert len(set(texts)) == len(Mistake), program


def test_docs_explain_every_mistake() -> None:
    protocol = (MISTAKES.parents[2] / "docs" / "protocol.md").read_text()
    section = protocol.partition("## Common mistakes")[2]
    assert section, "docs/protocol.md has no Common mistakes section"
    for mistake in Mistake:
        assert f"**{mistake}**" in section, mistake


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["python3", "bot.py"], Language.PYTHON),
        (["/usr/bin/python3.11", "-u", "bot.py"], Language.PYTHON),
        (["mawk", "-f", "bot.awk"], Language.AWK),
        (["node", "bot.js"], Language.JAVASCRIPT),
        (["sh", "bot.sh"], Language.SHELL),
        (["./bot"], Language.OTHER),
        (["go", "run", "bot.go"], Language.GO),
    ],
)
def test_the_language_is_told_by_the_command(argv: list[str], expected: Language) -> None:
    assert language(tuple(argv)) is expected


def test_a_program_built_by_go_is_told_go_s_ways(slow_moves_go: str) -> None:
    assert language((slow_moves_go,)) is Language.GO
    assert "Flush() after each line written through a bufio.Writer" in advice(
        Mistake.UNFLUSHED_OUTPUT, Language.GO, 10_000, 1_000
    )
    assert "bufio.Reader's ReadString" in advice(Mistake.BUFFERED_INPUT, Language.GO, 1, 1)
    assert "fmt.Fprintln(os.Stderr, ...)" in advice(Mistake.DEBUG_ON_STDOUT, Language.GO, 1, 1)
    # A compiled program not told apart: C, C++, Rust and Go are each named.
    flush = advice(Mistake.UNFLUSHED_OUTPUT, Language.OTHER, 10_000, 1_000)
    for named in ("fflush(stdout)", "std::endl", "io::stdout().flush()", "in Go Flush()"):
        assert named in flush


def test_the_language_of_a_script_is_told_by_its_interpreter_line(tmp_path: Path) -> None:
    script = tmp_path / "bot"
    script.write_text("#!/usr/bin/env -S python3 -u\nprint('ready')\n")
    assert language((str(script),)) is Language.PYTHON


def java_bot(tmp_path: Path) -> Path:
    """A directory holding the compiled `Bot` class (tests/players/mistakes/Bot.java)."""
    classes = tmp_path / "classes"
    subprocess.run(
        [needs("javac"), "-d", str(classes), str(MISTAKES / "Bot.java")],
        check=True,
        capture_output=True,
    )
    return classes


# Flags under which the JVM starts within the seat's default limits, whatever its defaults.
SMALL_JVM = ("-Xmx64m", "-XX:CompressedClassSpaceSize=32m", "-XX:ReservedCodeCacheSize=32m")


def died_at_start(report: Report) -> Check:
    """The only failing check of a program that died at its first start, which was its only
    match."""
    failed = failing(report)
    assert set(failed) == {"start"}, failed
    assert (report.matches, report.skipped) == (1, 5)
    assert "died at its first start" in report.stopped
    start = failed["start"]
    assert start.cause is Mistake.DIES_AT_START
    for wrong in ("standard error (", "`end`", "before you answer ready"):
        assert wrong not in start.advice
    assert {c.name: c.verdict for c in report.checks}["response time"] is Verdict.NOT_RUN
    return start


def test_a_java_bot_whose_class_does_not_exist_is_told_the_jvm_s_reason(tmp_path: Path) -> None:
    argv = [needs("java"), *SMALL_JVM, "-cp", str(java_bot(tmp_path)), "NoSuchBot"]
    start = died_at_start(run(argv, tmp_path))
    assert "saying 'Error: Could not find or load main class NoSuchBot / Caused by: java" in (
        start.detail
    )
    assert start.advice.startswith("the JVM found no class NoSuchBot: compile it first")
    assert start.stderr[-1] == "Caused by: java.lang.ClassNotFoundException: NoSuchBot"


@pytest.mark.parametrize("to_stdout", [False, True], ids=["as-told", "own-stdout"])
def test_a_java_bot_with_contradicting_heap_flags_is_told_the_jvm_s_reason(
    tmp_path: Path, to_stdout: bool
) -> None:
    # The referee tells a JVM to write its own errors on standard error; a program's flags
    # may say otherwise, and then the error's first line is no answer to `start`.
    own = ["-XX:-DisplayVMOutputToStderr"] if to_stdout else []
    argv = [needs("java"), *own, "-Xms2g", "-Xmx1g", "-cp", str(java_bot(tmp_path)), "Bot"]
    start = died_at_start(run(argv, tmp_path))
    assert "saying 'Initial heap size set to a larger value than the maximum heap size'" in (
        start.detail
    )
    assert "-Xms must not be larger than -Xmx" in start.advice
    words = (
        "Error occurred during initialization of VM",
        "Initial heap size set to a larger value than the maximum heap size",
    )
    if to_stdout:
        # Its line and its exit race: read first, the line is named as no answer; either way
        # the program died at its start, and its words are quoted from standard output.
        assert "instead of ready" not in start.detail or (
            f"having written {words[0]!r} instead of ready" in start.detail
        )
        assert start.stdout == words
    else:
        assert "instead of ready" not in start.detail
        assert start.stdout == ()
        assert start.stderr[-2:] == words


@pytest.mark.slow
def test_the_same_java_bot_passes(tmp_path: Path) -> None:
    argv = [needs("java"), *SMALL_JVM, "-cp", str(java_bot(tmp_path)), "Bot"]
    spec = PlayerSpec("submitted", tuple(argv))
    clocks = Clocks(start_ms=10_000, play_ms=1_000)
    # It answers ready and nothing else: only its start is of interest here.
    report = asyncio.run(validate(spec, [get_game("ticblock")], 1, clocks, tmp_path / "work"))
    assert failing(report).get("start") is None, failing(report)


def test_a_script_that_is_not_there_is_told_its_path(tmp_path: Path) -> None:
    start = died_at_start(run([sys.executable, str(tmp_path / "no_such_bot.py")], tmp_path))
    assert "can't open file" in start.detail
    assert start.advice.startswith(f"there is no file {tmp_path / 'no_such_bot.py'}: give")


def test_a_script_the_jail_may_not_read_is_told_so(tmp_path: Path) -> None:
    bot = tmp_path / "bot.py"  # in a directory of the test's user alone
    bot.write_text("print('ready', flush=True)\n")
    start = died_at_start(run([sys.executable, str(bot)], tmp_path))
    assert start.advice.startswith(f"the jail's user may not read {bot}: make it")


def test_a_python_bot_that_raises_at_its_start_is_told_the_exception(tmp_path: Path) -> None:
    start = died_at_start(run([sys.executable, str(MISTAKES / "raises_at_start.py")], tmp_path))
    assert "saying \"ModuleNotFoundError: No module named 'no_such_module_here'\"" in start.detail
    assert "install it for that interpreter" in start.advice


def test_a_pyenv_shim_is_told_the_interpreter_it_stands_for(
    tmp_path: Path, pyenv_shim: PyenvShim
) -> None:
    shim, real = pyenv_shim.shim, pyenv_shim.real
    start = died_at_start(run([str(shim), str(MISTAKES / "debug_print.py")], tmp_path))
    assert start.advice == (
        f"{shim} is a pyenv shim, which cannot run in the jail: use {real} in the command instead"
    )


@pytest.mark.slow
def test_a_slow_start_is_measured_and_told_the_start_clock_s_key(tmp_path: Path) -> None:
    spec = PlayerSpec("submitted", (sys.executable, str(MISTAKES / "slow_start.py"), "3.5"))
    clocks = Clocks(start_ms=2_000, play_ms=1_000)
    report = asyncio.run(validate(spec, [get_game("ticblock")], 2, clocks, tmp_path / "work"))
    failed = failing(report)
    assert set(failed) == {"start"}, failed
    start = failed["start"]
    assert start.cause is Mistake.SLOW_START
    late = float(start.detail.partition("its ready came ")[2].partition(" s after start")[0])
    assert late >= 3.5
    assert "--start-clock MS for validate and play, start_clock in a tournament config" in (
        start.advice
    )
    assert "than 2000 ms" in start.advice
    assert report.matches == 1
    assert {c.name: c.verdict for c in report.checks}["response time"] is Verdict.NOT_RUN


def test_a_move_never_answered_is_over_the_slowest_answer_not_below_the_95th_percentile() -> None:
    # Nineteen answers of 1100 ms or so of a 1000 ms clock, one of 1107 ms, and one move
    # whose answer never came: the slowest of all, over every time measured.
    late = [Late("quad, x", Process.REUSED, 1, 2 * n + 1, False, 1100.0) for n in range(19)]
    late += [Late("quad, x", Process.REUSED, 1, 41, False, 1107.0)]
    late += [Late("quad, x", Process.REUSED, 1, 43, False, None)]
    evidence = Evidence(asked=21, late=late, matches=1)
    (times,) = [c for c in checks(evidence, QUICK, Language.PYTHON) if c.name == "response time"]
    assert times.detail == (
        "median 1100 ms, 95th percentile 1107 ms, max over 1107 ms of 1000 ms"
        " (21 moves, 21 late, 1 of them never answered)"
    )


def test_moves_late_of_themselves_are_told_with_the_matches_they_were_in() -> None:
    # Late at step 3 of one match and step 8 of another: not two steps of one match.
    late = [
        Late("quad, x", Process.REUSED, 1, 3, False, 3100.0),
        Late("quad, x", Process.REUSED, 2, 8, False, 2500.0),
    ]
    evidence = Evidence(asked=34, late=late, times_ms=[50.0] * 32, matches=2)
    evidence.faults[FaultKind.TIMEOUT] = [
        Offence(f"quad, x, step {late.step}: no answer within 1000 ms", late.process, late.match)
        for late in late
    ]
    report = Report(("bot",), checks(evidence, QUICK, Language.PYTHON), 2, 1.0, 10.0, None, None)
    (clock,) = [c for c in report.checks if c.name == "play clock"]
    assert "late of itself at 2 of 34 moves, in 2 matches: at steps 3, 8;" in clock.detail
    # The report in words names the cause, as --json does.
    assert report_text(report, None).startswith(
        "how to fix play clock (late at some moves): some moves take far longer"
    )
