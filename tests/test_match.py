"""Matches against misbehaving programs: every fault is named, and nothing is left running."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from referee.clock import Clocks
from referee.games import get_game
from referee.match import MatchSetup, play_fresh
from referee.players.base import PlayerSpec
from referee.players.builtin import PROGRAMS, player_spec
from referee.players.process import ProgramPlayer
from referee.players.starter import STARTERS
from referee.policy import Policy
from referee.records.signing import results_key
from tests.support.matches import QUICK, RANDOM, assert_nothing_left, program, run
from tests.support.referees import bot_copy, process_state, referee_with_one_player

# Every transcript these tests write must replay and verify (issue: replay).
pytestmark = pytest.mark.usefixtures("every_transcript_verifies")

HERE = Path(__file__).resolve().parent
MISBEHAVING = HERE / "players" / "misbehaving.py"


# mode, extra arguments, (step, kind, detail) of the fault that player1 commits
ZOO = [
    ("silent-start", [], (0, "timeout", "no answer within 2000 ms")),
    ("bad-ready", [], (0, "protocol", "answered 'ok' instead of ready")),
    ("late", ["--delay-ms", "450"], (1, "timeout", "no answer within 300 ms")),
    ("illegal", [], (1, "illegal", "played noop, which is not legal here")),
    (
        "garbage",
        [],
        (1, "protocol", "answered 'I think, therefore I am!', which is not a move of hex-pie"),
    ),
    ("huge", [], (1, "protocol", "a line longer than 64 KiB")),
    ("not-utf8", [], (1, "protocol", "a line that is not UTF-8")),
    ("exit", ["--at", "2"], (3, "crash", "exited with code 3")),
    # Half a move and no end, then silence: that step only; the next answers are taken.
    ("partial", ["--at", "2"], (3, "timeout", "no answer within 300 ms")),
    # Its child holds the output pipe: the exit is a crash all the same, not a timeout.
    ("orphan", ["--at", "2"], (3, "crash", "exited with code 3")),
    ("close-stdout", ["--at", "2"], (3, "crash", "closed its output")),
]


@pytest.mark.parametrize(("mode", "extra", "fault"), ZOO, ids=[z[0] for z in ZOO])
def test_a_fault_under_forfeit_ends_the_match_at_once(tmp_path: Path, mode, extra, fault) -> None:
    bot = bot_copy(tmp_path)
    bad = program("bad", bot, mode, *extra)
    transcript, players = run(tmp_path, "hex-pie", [bad, program("random", RANDOM)])

    assert [(f["step"], f["role"], f["kind"]) for f in transcript["faults"]] == [
        (*fault[:1], "player1", fault[1])
    ]
    assert transcript["faults"][0]["detail"] == fault[2]
    assert transcript["faults"][0]["replacement"] is None
    assert transcript["end_reason"] == "forfeit"
    assert transcript["goals"] == {"player1": 0, "player2": 100}
    assert len(transcript["steps"]) == max(0, fault[0] - 1)
    assert_nothing_left(players, bot)


@pytest.mark.parametrize(("mode", "extra", "fault"), ZOO, ids=[z[0] for z in ZOO])
def test_a_fault_under_random_is_replaced_and_play_goes_on(
    tmp_path: Path, mode, extra, fault
) -> None:
    bot = bot_copy(tmp_path)
    bad = program("bad", bot, mode, *extra)
    transcript, players = run(tmp_path, "hex-pie", [bad, program("random", RANDOM)], Policy.RANDOM)

    faults = transcript["faults"]
    assert [(f["step"], f["role"], f["kind"]) for f in faults] == [
        (*fault[:1], "player1", fault[1])
    ]
    assert transcript["end_reason"] == "terminal"
    assert sorted(transcript["goals"].values()) == [0, 100]
    if fault[0] > 0:
        replaced = transcript["steps"][fault[0] - 1]
        assert replaced["moves"]["player1"] == faults[0]["replacement"]
        assert "player1" not in replaced["times_ms"] or fault[1] != "timeout"
    assert_nothing_left(players, bot)


def test_a_late_answer_is_dropped_not_taken_for_the_next(tmp_path: Path) -> None:
    bad = program("bad", MISBEHAVING, "late", "--delay-ms", "450")
    transcript, players = run(tmp_path, "hex-pie", [bad, program("random", RANDOM)], Policy.RANDOM)
    assert [f["step"] for f in transcript["faults"]] == [1]
    assert "dropped a late answer" in (tmp_path / "bad.log").read_text()
    # Every later answer of player1 is its own, in time.
    asked = [s for s in transcript["steps"] if "player1" in s["times_ms"]]
    assert len(asked) > 5
    assert_nothing_left(players)


@pytest.mark.parametrize("policy", [Policy.FORFEIT, Policy.RANDOM])
@pytest.mark.parametrize("mode", ["ignore-term", "child"])
def test_players_that_will_not_go_are_killed_with_everything_they_started(
    tmp_path: Path, mode: str, policy: Policy
) -> None:
    bot = bot_copy(tmp_path)
    bad = program("bad", bot, mode, "--say-pids")
    transcript, players = run(tmp_path, "ticblock", [bad, program("random", RANDOM)], policy)
    assert transcript["faults"] == []
    assert transcript["end_reason"] == "terminal"
    said = [line for line in (tmp_path / "bad.log").read_text().splitlines() if "pids:" in line]
    assert len(said[0].split()) == (3 if mode == "child" else 2), said
    assert_nothing_left(players, bot)


def test_a_missing_program_is_a_start_error(tmp_path: Path) -> None:
    from referee.errors import PlayerStartError

    with pytest.raises(PlayerStartError, match="cannot start '/no/such/bot'"):
        run(
            tmp_path,
            "ticblock",
            [PlayerSpec("ghost", ("/no/such/bot",)), program("random", RANDOM)],
        )
    assert not (tmp_path / "match.json").exists()


def test_a_start_error_names_the_program_from_its_own_directory(tmp_path: Path) -> None:
    """As its record does: not where that directory is on this machine (an arena's)."""
    from referee.errors import PlayerStartError

    ghost = PlayerSpec.from_command("ghost", "./bot", cwd=tmp_path)
    with pytest.raises(PlayerStartError) as raised:
        run(tmp_path, "ticblock", [ghost, program("random", RANDOM)])
    assert "cannot start './bot'" in str(raised.value)
    assert str(tmp_path) not in str(raised.value)


FAIR = Clocks(start_ms=2_000, play_ms=400)


@pytest.mark.slow
def test_an_answer_at_80_percent_of_the_play_clock_is_never_a_timeout(tmp_path: Path) -> None:
    slow = program("slow", MISBEHAVING, "late", "--at", "0", "--delay-ms", "320")
    transcript, players = run(tmp_path, "ticblock", [slow, program("random", RANDOM)], clocks=FAIR)
    assert transcript["faults"] == []
    assert transcript["end_reason"] == "terminal"
    times = [
        step["times_ms"]["xcplayer"]
        for step in transcript["steps"]
        if "xcplayer" in step["times_ms"]
    ]
    assert len(times) >= 5
    assert all(320 <= time < 400 for time in times), times
    assert_nothing_left(players)


def asked_steps(transcript: dict, role: str) -> list[int]:
    """The steps at which `role` had a choice of moves, so was asked (forced moves are not)."""
    game = get_game(transcript["game"])
    state, asked = game.initial_state(), []
    for step in transcript["steps"]:
        if len(game.legal_moves(state, game.role_index(role))) > 1:
            asked.append(step["step"])
        state = game.next_state(state, tuple(step["moves"][r] for r in game.roles))
    return asked


@pytest.mark.parametrize("policy", [Policy.FORFEIT, Policy.RANDOM])
@pytest.mark.slow
def test_an_answer_at_120_percent_of_the_play_clock_is_always_a_timeout(
    tmp_path: Path, policy
) -> None:
    slow = program("slow", MISBEHAVING, "late", "--at", "0", "--delay-ms", "480")
    transcript, players = run(tmp_path, "ticblock", [slow, program("random", RANDOM)], policy, FAIR)
    faults = [(f["role"], f["kind"]) for f in transcript["faults"]]
    assert faults and set(faults) == {("xcplayer", "timeout")}
    if policy is Policy.RANDOM:
        # Every step in which xcplayer had a choice is a timeout; none of its answers counted.
        assert [f["step"] for f in transcript["faults"]] == asked_steps(transcript, "xcplayer")
        assert all("xcplayer" not in step["times_ms"] for step in transcript["steps"])
    else:
        assert transcript["faults"][0]["step"] == 1
    assert_nothing_left(players)


def test_a_time_bank_pays_for_answers_over_the_clock(tmp_path: Path) -> None:
    slow = program("slow", MISBEHAVING, "late", "--at", "0", "--delay-ms", "1400")
    clocks = Clocks(start_ms=2_000, play_ms=400, time_bank_ms=2_800)
    transcript, players = run(
        tmp_path, "ticblock", [slow, program("random", RANDOM)], Policy.FORFEIT, clocks
    )
    # 1000 ms over the clock per answer: the bank pays for two, the third is a timeout. The
    # 800 ms left over keep it so on a loaded machine, where an answer's overhead may reach
    # a few hundred ms; and the third would need 1000 ms of the bank's 800 at most.
    # The forfeit ends the match, so the steps on record are those before the third answer.
    assert len(asked_steps(transcript, "xcplayer")) == 2
    next_step = transcript["steps"][-1]["step"] + 1
    assert [(f["step"], f["kind"]) for f in transcript["faults"]] == [(next_step, "timeout")]
    assert_nothing_left(players)


def test_the_log_keeps_standard_error_up_to_its_cap(tmp_path: Path) -> None:
    noisy = program("noisy", MISBEHAVING, "stderr-flood")
    transcript, players = run(tmp_path, "ticblock", [noisy, program("random", RANDOM)])
    assert transcript["end_reason"] == "terminal"
    log = (tmp_path / "noisy.log").read_bytes()
    assert log.startswith(b"noise noise")
    assert 1024 * 1024 <= len(log) < 1024 * 1024 + 200
    assert log.rstrip().endswith(b"# referee: log cut at 1048576 bytes")
    assert transcript["seats"][0]["log"] == str(tmp_path / "noisy.log")
    assert_nothing_left(players)


def test_an_interrupted_match_is_recorded_as_aborted(tmp_path: Path) -> None:
    out = tmp_path / "match.json"
    slow = program("slow", MISBEHAVING, "late", "--at", "0", "--delay-ms", "200")
    players = [
        ProgramPlayer(spec, tmp_path / f"{spec.name}.log")
        for spec in (slow, program("random", RANDOM))
    ]
    setup = MatchSetup(
        "m-abort", get_game("hex-pie"), players, Clocks(2_000, 1_000), Policy.FORFEIT, seed=1
    )

    async def interrupt() -> None:
        # Stopped once a step is played, however long the players take to start.
        played = asyncio.Event()
        task = asyncio.create_task(
            play_fresh(setup, out, results_key(tmp_path, None)[0], lambda *_step: played.set())
        )
        async with asyncio.timeout(300):
            await played.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(interrupt())
    transcript = json.loads(out.read_text())
    assert transcript["end_reason"] == "aborted"
    assert transcript["goals"] is None
    assert 1 <= len(transcript["steps"]) < 20
    assert_nothing_left(players)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_one_process_can_play_many_matches(tmp_path: Path) -> None:
    from referee.match import Match

    async def three_matches() -> list[str]:
        players = [ProgramPlayer(program("random", RANDOM), tmp_path / f"{i}.log") for i in (0, 1)]
        for player in players:
            await player.start()
        pids = [player.pid for player in players]
        reasons = []
        try:
            for number in range(3):
                setup = MatchSetup(f"m-{number}", get_game("quad"), players, QUICK, seed=number)
                transcript = await Match(setup).run()
                reasons.append(transcript.end_reason)
                assert [player.pid for player in players] == pids
                assert all(player.alive for player in players)
        finally:
            await asyncio.gather(*(player.close() for player in players))
        assert_nothing_left(players)
        return reasons

    assert asyncio.run(three_matches()) == ["terminal"] * 3


def test_a_player_starts_in_its_directory_with_its_environment(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    check = f'[ "$(pwd)" = "{home}" ] && [ "$BOT_LEVEL" = 3 ] && exec "$@"'
    command = ["sh", "-c", check, "sh", sys.executable, str(RANDOM)]
    picky = player_spec(command, "picky", cwd=home, env={"BOT_LEVEL": "3"})
    transcript, players = run(tmp_path, "ticblock", [picky, program("random", RANDOM)])
    assert transcript["faults"] == []
    assert transcript["end_reason"] == "terminal"
    assert_nothing_left(players)


@pytest.mark.parametrize("game_id", ["blocker-parallel", "hex-pie"])
def test_the_shell_sample_player_plays_clean_matches(tmp_path: Path, game_id: str) -> None:
    shell = PlayerSpec("shell", ("sh", str(STARTERS / "random_player.sh")))
    transcript, players = run(tmp_path, game_id, [shell, program("random", RANDOM)])
    assert transcript["faults"] == []
    assert transcript["end_reason"] == "terminal"
    assert_nothing_left(players)


@pytest.mark.parametrize("bot", ["random_player.py", "random_player.sh"])
def test_the_minimal_sample_bots_pick_moves_nested_as_deep_as_gdl_nests_them(bot: str) -> None:
    legal = {"(pick (f (f z z) z))", "noop", "(pick (f z (f z z)))"}
    interpreter = sys.executable if bot.endswith(".py") else "sh"
    lines = "start m1 g r 1000 1000\n" + f"go 1 1000 {' '.join(sorted(legal))}\n" * 20 + "quit\n"
    done = subprocess.run(
        [interpreter, str(STARTERS / bot)],
        input=lines,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    answers = done.stdout.splitlines()
    assert answers[0] == "ready" and len(answers) == 21, done.stdout
    assert set(answers[1:]) <= legal, answers


def test_the_mcts_sample_player_answers_in_time_for_both_roles(tmp_path: Path) -> None:
    mcts = program("mcts", PROGRAMS / "mcts_player.py")
    clocks = Clocks(start_ms=5_000, play_ms=500)
    for seats in ([mcts, program("random", RANDOM)], [program("random", RANDOM), mcts]):
        transcript, players = run(tmp_path, "ticblock", seats, Policy.FORFEIT, clocks)
        assert transcript["faults"] == []
        assert transcript["end_reason"] == "terminal"
        times = [t for step in transcript["steps"] for role, t in step["times_ms"].items()]
        assert times and max(times) < 500
        assert_nothing_left(players)


def test_a_player_dies_with_the_referee_even_when_it_never_reads_its_input(
    tmp_path: Path,
) -> None:
    # A referee in its own process, killed with SIGKILL: no chance to clean up.
    referee, pid = referee_with_one_player(("sleep", "300"), tmp_path / "s.log")
    assert process_state(pid) not in (None, "Z"), "the player is not running"
    referee.kill()
    referee.wait()
    deadline = time.monotonic() + 5
    while process_state(pid) not in (None, "Z") and time.monotonic() < deadline:
        time.sleep(0.01)
    assert process_state(pid) in (None, "Z"), "the player outlived the referee"


@pytest.mark.slow
def test_a_person_is_not_timed(tmp_path: Path) -> None:
    from referee.players.human import HumanPlayer
    from referee.records.verify import Outcome, verify_file

    cells = iter(f"(mark{board} {m} {n})" for board in (1, 2) for m in (1, 2, 3) for n in (1, 2, 3))

    async def slow(prompt: str) -> str:
        await asyncio.sleep(0.3)  # longer than the play clock, every time
        return next(cells)

    person = HumanPlayer(slow, lambda text: None)
    other = ProgramPlayer(program("random", RANDOM), tmp_path / "random.log")
    setup = MatchSetup(
        "m-person", get_game("double-tictactoe"), [person, other], Clocks(2_000, 100), Policy.RANDOM
    )
    out = tmp_path / "match.json"
    asyncio.run(play_fresh(setup, out, results_key(tmp_path, None)[0]))
    transcript = json.loads(out.read_text())
    assert [f for f in transcript["faults"] if f["role"] == "xplayer"] == []
    times = [s["times_ms"]["xplayer"] for s in transcript["steps"] if "xplayer" in s["times_ms"]]
    assert times and min(times) >= 300
    assert verify_file(out).outcome is Outcome.VERIFIED
