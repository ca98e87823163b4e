"""A hostile rulesheet: states that blow up when grounded are computed in a limited child,
and a state past the limits ends its match as a fault of the rules, recorded and verified."""

from __future__ import annotations

import asyncio
import json
import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Hashable
from pathlib import Path

import pytest

from referee.clock import Clocks
from referee.errors import ConfigError, GameFault, StateLimit, StateLimitFault
from referee.games import GdlGame, StateLimits, load_rulesheet
from referee.games.gdl.remote import OutOfTime, RemotePerState
from referee.games.gdl.syntax import one_line
from referee.ggp.messages import Start, format_request
from referee.match import MatchSetup, play_fresh
from referee.players.builtin import make_player, player_spec
from referee.policy import Policy
from referee.records.replay import Outcome, verify_file
from referee.records.signing import results_key
from referee.records.transcript import read_transcript
from referee.tournaments.config import load_config
from tests.test_gateway import ask, served
from tests.test_tournament import run, seeded, transcripts, write_config

ROOT = Path(__file__).resolve().parents[1]
EXPLODING = ROOT / "tests" / "rulesheets" / "exploding.kif"
MIB = 1 << 20
SEATS = ("-p", "red=random", "-p", "blue=random", "--state-memory-mb", "1024")

pytestmark = pytest.mark.usefixtures("every_transcript_verifies", "quick_load")


def exploding(limits: StateLimits) -> GdlGame:
    game = load_rulesheet(EXPLODING, limits)
    assert isinstance(game.reasoner, RemotePerState)
    return game


def first_states(game: GdlGame, count: int = 4) -> list[Hashable]:
    """The states of the exploding game up to state `count`, each role picking its last
    legal move (the newest item, so that the items grow as fast as they can)."""
    states = [game.initial_state()]
    for _ in range(count):
        state = states[-1]
        joint = tuple(game.legal_moves(state, role)[-1] for role in range(len(game.roles)))
        states.append(game.next_state(state, joint))
    return states


def test_a_state_past_the_memory_limit_is_a_fault_of_the_rules_outside_this_process() -> None:
    game = exploding(StateLimits(memory_mb=512, seconds=300))
    states = first_states(game)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    with pytest.raises(StateLimitFault) as caught:
        game.is_terminal(states[4])
    assert caught.value.limit is StateLimit.MEMORY
    assert "needs more than 512 MiB to ground" in str(caught.value)
    # Grounded in the child: this process did not grow by the state's hundreds of MiB.
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 < before + 128 * MIB
    # Asked again, the same fault, without a new grounding to find it.
    with pytest.raises(StateLimitFault) as again:
        game.legal_moves(states[4], 0)
    assert again.value is caught.value


def test_the_reasoner_started_again_keeps_every_state_it_had() -> None:
    game = exploding(StateLimits(memory_mb=512, seconds=300))
    states = first_states(game)
    with pytest.raises(StateLimitFault):
        game.is_terminal(states[4])
    # A new child, given the facts and moves met: the same states by the same numbers (the
    # items grow whatever is picked, so any joint move leads from state 3 to state 4).
    joint = tuple(game.legal_moves(states[3], role)[0] for role in range(2))
    assert game.next_state(states[3], joint) == states[4]
    assert "(item z)" in game.facts(states[4])


def test_a_state_past_its_deadline_is_a_fault_of_the_rules() -> None:
    game = exploding(StateLimits(memory_mb=16_384, seconds=1))
    states = first_states(game)
    with pytest.raises(StateLimitFault) as caught:
        game.is_terminal(states[4])
    assert caught.value.limit is StateLimit.TIME
    assert "does not ground within 1 s (state_seconds)" in str(caught.value)


def test_a_searchers_own_deadline_gives_up_the_question_and_blames_no_state() -> None:
    game = exploding(StateLimits(memory_mb=16_384, seconds=1))
    states = first_states(game)
    game.give_up_at(time.monotonic() + 0.1)
    with pytest.raises(OutOfTime):
        game.is_terminal(states[4])
    game.give_up_at(None)
    # Not remembered as the state's fault: asked without a deadline, the state's own limit.
    with pytest.raises(StateLimitFault) as caught:
        game.is_terminal(states[4])
    assert caught.value.limit is StateLimit.TIME


def test_a_reasoner_that_dies_is_a_fault_of_the_rules_and_then_started_again() -> None:
    game = exploding(StateLimits())
    states = first_states(game, 3)
    reasoner = game.reasoner
    assert isinstance(reasoner, RemotePerState)
    child = reasoner._child
    assert child is not None
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    joint = tuple(game.legal_moves(states[2], role)[0] for role in range(2))
    with pytest.raises(GameFault, match=r"died|memory"):
        game.next_state(states[2], joint)
    other = tuple(game.legal_moves(states[2], role)[1] for role in range(2))
    assert len(game.legal_moves(game.next_state(states[2], other), 0)) > 1


def test_bad_limits_are_refused() -> None:
    with pytest.raises(ConfigError, match="state_memory_mb"):
        StateLimits(memory_mb=10)
    with pytest.raises(ConfigError, match="state_seconds"):
        StateLimits(seconds=0)


def _random_seats(tmp_path: Path, game: GdlGame) -> list:
    return [
        make_player(player_spec("random", role), tmp_path / f"{role}.log") for role in game.roles
    ]


def test_a_match_ends_where_the_rules_cannot_compute_a_state(tmp_path: Path) -> None:
    game = exploding(StateLimits(memory_mb=4096, seconds=1))
    out = tmp_path / "m.json"
    key, _ = results_key(tmp_path, None)
    setup = MatchSetup("m1", game, _random_seats(tmp_path, game), Clocks(), Policy.FORFEIT, 7)
    transcript = asyncio.run(play_fresh(setup, out, key))
    assert transcript.end_reason == "aborted"
    assert transcript.goals is None
    assert transcript.faults == []  # no player's fault
    assert len(transcript.steps) == 4
    fault = transcript.rules_fault
    assert fault is not None
    assert (fault.step, fault.limit, fault.state_memory_mb, fault.state_seconds) == (
        4,
        "time",
        4096,
        1.0,
    )
    assert read_transcript(out).rules_fault == fault
    verdict = verify_file(out)
    assert verdict.outcome is Outcome.VERIFIED, verdict.problem


def _tampered(tmp_path: Path, source: Path, change) -> Path:
    data = json.loads(source.read_text())
    data.pop("signature")
    change(data)
    path = tmp_path / "tampered.json"
    path.write_text(json.dumps(data))
    return path


def test_verifying_a_rules_fault_checks_it_against_the_rules(tmp_path: Path) -> None:
    game = exploding(StateLimits(memory_mb=4096, seconds=1))
    out = tmp_path / "results" / "m.json"
    key, _ = results_key(out.parent, None)
    setup = MatchSetup("m1", game, _random_seats(tmp_path, game), Clocks(), Policy.FORFEIT, 7)
    asyncio.run(play_fresh(setup, out, key))

    def earlier(data: dict) -> None:
        data["rules_fault"]["step"] = 3

    def ended(data: dict) -> None:
        data["end_reason"] = "terminal"
        data["goals"] = {"red": 50, "blue": 50}

    def no_fault(data: dict) -> None:
        data["end_reason"], data["rules_fault"] = "terminal", None
        data["goals"] = {"red": 50, "blue": 50}

    def memory(data: dict) -> None:
        data["rules_fault"]["state_memory_mb"] = 10

    def later_fault(data: dict) -> None:
        data["faults"] = [{"step": 5, "role": "red", "kind": "timeout", "detail": "late"}]

    expected = {
        earlier: "rules_fault: at state 3, but the match ends after step 4",
        ended: "end: recorded as terminal, but the rules failed the match",
        no_fault: "step 4: the rules fail at this state",
        memory: "rules_fault: state_memory_mb: 10 MiB is too little",
        later_fault: "step 5: red: a fault at a step that was never played",
    }
    for change, what in expected.items():
        verdict = verify_file(_tampered(tmp_path, out, change))
        assert verdict.outcome is Outcome.FAILED, change.__name__
        assert verdict.replayed is not None and verdict.replayed.problem is not None
        assert str(verdict.replayed.problem).startswith(what), (change.__name__, verdict.problem)
    (tmp_path / "tampered.json").unlink()


def test_a_rules_fault_claimed_of_a_state_that_computes_is_caught(tmp_path: Path) -> None:
    game = exploding(StateLimits(memory_mb=4096, seconds=1))
    out = tmp_path / "results" / "m.json"
    key, _ = results_key(out.parent, None)
    setup = MatchSetup("m1", game, _random_seats(tmp_path, game), Clocks(), Policy.FORFEIT, 7)
    asyncio.run(play_fresh(setup, out, key))

    def one_step_earlier(data: dict) -> None:
        data["steps"].pop()
        data["rules_fault"]["step"] = 3

    data = json.loads(_tampered(tmp_path, out, one_step_earlier).read_text())
    data["rules_fault"]["limit"] = "memory"
    (tmp_path / "tampered.json").write_text(json.dumps(data))
    verdict = verify_file(tmp_path / "tampered.json")
    assert verdict.outcome is Outcome.FAILED
    assert "state 3 computes here" in str(verdict.problem)
    # A deadline depends on the machine: a state that computes here in time is only noted.
    data["rules_fault"]["limit"] = "time"
    (tmp_path / "tampered.json").write_text(json.dumps(data))
    verdict = verify_file(tmp_path / "tampered.json")
    assert verdict.outcome is Outcome.VERIFIED, verdict.problem
    assert verdict.replayed is not None and "computes here within 1 s" in str(verdict.replayed.note)
    (tmp_path / "tampered.json").unlink()


def test_a_tournament_records_the_rules_fault_and_plays_its_other_matches(
    tmp_path: Path,
) -> None:
    # A state given 3 s: were it computed on the event loop, the ticblock match playing
    # meanwhile would wait as long for its answers, and time out at its 1 s clock.
    config = load_config(
        write_config(
            tmp_path,
            {"a": seeded(1), "b": seeded(2)},
            games=f"[ticblock, {EXPLODING}]",
            extra="concurrency: 2\nrounds: 2\nstate_seconds: 3\n",
            play_clock=1000,
        )
    )
    assert config.states == StateLimits(seconds=3)
    recorder = run(config)
    found = transcripts(config.output)
    assert len(found) == 8
    for name, transcript in found.items():
        if name.startswith("ticblock"):
            assert transcript.end_reason == "terminal", name
            assert transcript.faults == [], name
        else:
            assert transcript.end_reason == "aborted", name
            assert transcript.rules_fault is not None and transcript.rules_fault.step == 4, name
            assert transcript.rules_fault.limit == "time"
    assert len(recorder.played) == 8
    # Played again, the same limits would fail the same way: nothing is left to play.
    again = run(config)
    assert again.plan == (8, 8) and again.played == []


def test_referee_play_of_the_exploding_game_one_line_exit_2_and_a_small_referee(
    tmp_path: Path,
) -> None:
    """The referee's own peak memory, read from /proc as it exits, while a state grows to
    its 1 GiB limit in the child."""
    wrapper = (
        "import atexit, sys\n"
        "from referee.cli import main\n"
        "def hwm():\n"
        "    for line in open('/proc/self/status'):\n"
        "        if line.startswith('VmHWM'):\n"
        "            print('peak', line.split()[1], file=sys.stderr)\n"
        "atexit.register(hwm)\n"
        "sys.argv = ['referee', *sys.argv[1:]]\n"
        "main()\n"
    )
    out = tmp_path / "m.json"
    done = subprocess.run(
        [sys.executable, "-c", wrapper, "play", str(EXPLODING), *SEATS, "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if not line.startswith("referee: warning")]
    peak_kib = int(next(line for line in lines if line.startswith("peak")).split()[1])
    errors = [line for line in lines if not line.startswith("peak")]
    assert len(errors) == 1, errors
    assert "state 4" in errors[0] and "1 GiB" in errors[0] and "state_memory_mb" in errors[0]
    assert peak_kib < 1 << 20
    transcript = read_transcript(out)
    assert transcript.rules_fault is not None and transcript.rules_fault.limit == "memory"


def test_serve_ends_a_match_whose_rules_blow_up_and_goes_on_serving(tmp_path: Path) -> None:
    start = format_request(Start("m1", "red", one_line(EXPLODING.read_text()), 120, 30))
    output: list[str] = []
    with served(tmp_path, "players/random_player.py", "--state-seconds", "2", said=output) as port:
        assert ask(port, start) == (200, "ready")
        said = []
        previous = "NIL"
        for _ in range(8):
            status, move = ask(port, f"(PLAY m1 {previous})")
            assert status == 200
            said.append(move)
            if move == "busy":
                break
            previous = f"({move} {move})"  # blue may pick what red picks: items are shared
        # States 0 to 3 answered with a move; state 4 blows up: the match is over here.
        assert len(said) == 5 and said[-1] == "busy", said
        assert all(move.startswith("(pick ") for move in said[:-1])
        assert ask(port, "(INFO)") == (200, "((name random_player) (status available))")
        assert ask(port, start.replace("m1", "m2")) == (200, "ready")
    failed = next(line for line in output if line.startswith("m1: the rules fail at state 4"))
    assert "does not ground within 2 s" in failed
    assert "m1: aborted" in output
