"""A hostile rulesheet: states that blow up when grounded are computed in a limited child,
and a state past the limits ends its match as a fault of the rules, recorded and verified."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import re
import resource
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Hashable, Iterator
from pathlib import Path

import pytest

from referee.clock import Clocks
from referee.computing import computed
from referee.errors import ConfigError, GameFault, StateLimit, StateLimitFault
from referee.games import GdlGame, JointMove, StateLimits, get_game, load_rulesheet, load_text
from referee.games.base import MOVE_LIMIT
from referee.games.gdl import remote
from referee.games.gdl.reasoner import State
from referee.games.gdl.remote import OutOfTime, RemotePerState
from referee.games.gdl.syntax import one_line
from referee.ggp.messages import Start, format_request
from referee.match import MatchSetup, play_fresh
from referee.players.builtin import make_player, player_spec
from referee.policy import Policy
from referee.protocol import LINE_LIMIT
from referee.records.rules_fault import recorded_limits
from referee.records.signing import results_key
from referee.records.transcript import RulesFault, read_transcript
from referee.records.verify import FileVerdict, Outcome, verify_file
from referee.sandbox.proc import stats_of
from referee.tournaments.config import load_config
from tests.support.gateway import ask, served
from tests.support.paths import ROOT
from tests.support.replays import ggp_exported, ggp_imported
from tests.support.rulesheets import dense
from tests.support.tournaments import run, seeded, transcripts, write_config

EXPLODING = ROOT / "tests" / "rulesheets" / "exploding.kif"
MIB = 1 << 20
SEATS = ("-p", "red=random", "-p", "blue=random", "--state-memory-mb", "1024")

# quick_load first, so that it is undone last: the transcripts are verified with the whole
# grounding given up after 1 s too, as they were played (else each replay spends 10 s on it).
pytestmark = pytest.mark.usefixtures("quick_load", "every_transcript_verifies")


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


@pytest.mark.slow
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


def test_a_game_compiled_whole_is_compiled_outside_the_referees_process(tmp_path: Path) -> None:
    """Python's compiler takes about 450 MiB for the 90,000 rules of this one: in the
    grounder's child, not in the process that loads the game."""
    rules = tmp_path / "dense.kif"
    rules.write_text(dense(300))
    # The whole game's budget of time raised past what a loaded machine could take: this is
    # about where the compiling happens, not how fast (a few seconds on an idle machine).
    script = (
        "import sys\n"
        "from referee.games import load_rulesheet\n"
        "from referee.games.gdl import ground\n"
        "ground.WHOLE_SECONDS = 240.0\n"
        "game = load_rulesheet(sys.argv[1])\n"
        "assert game.reasoner.complete\n"
        "print(next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(rules)], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) * 1024 < 200 * MIB


@pytest.mark.slow
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


def test_what_the_referee_keeps_of_the_states_text_is_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # State 4 brings hundreds of new items: about 120 KB of text with their symbols.
    monkeypatch.setattr(remote, "ANSWER_LIMIT", 100_000)
    game = exploding(StateLimits(memory_mb=512, seconds=300))
    with pytest.raises(StateLimitFault, match="a state's new facts and moves take over") as caught:
        first_states(game)
    assert caught.value.limit is StateLimit.MEMORY
    # Met a bit at a time, they are bounded in all: every question fails from then on.
    monkeypatch.setattr(remote, "ANSWER_LIMIT", 64 << 20)
    monkeypatch.setattr(remote, "MET_LIMIT", 2_000)
    game = exploding(StateLimits(memory_mb=512, seconds=300))
    with pytest.raises(StateLimitFault, match="the facts and moves of the states met take over"):
        first_states(game)
    with pytest.raises(StateLimitFault, match="the facts and moves of the states met take over"):
        game.next_state(game.initial_state(), ("(pick z)", "(pick z)"))


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


# Each step wraps the term in ten more lists, and a role may pick it: from state 7 on, a
# legal move is nested deeper than any KIF a player's line or a GGP PLAY may carry.
DEEPENING = """
    (role red) (role blue) (init (t z)) (init (step 0))
    (succ 0 1) (succ 1 2) (succ 2 3) (succ 3 4) (succ 4 5) (succ 5 6) (succ 6 7) (succ 7 8)
    (<= (legal ?r (pick ?x)) (role ?r) (true (t ?x)))
    (<= (legal ?r wait) (role ?r))
    (<= (next (t (f (f (f (f (f (f (f (f (f (f ?x)))))))))))) (true (t ?x)))
    (<= (next (step ?m)) (true (step ?n)) (succ ?n ?m))
    (<= terminal (true (step 8)))
    (<= (goal ?r 50) (role ?r))
"""


def test_a_legal_move_nested_deeper_than_a_player_can_send_is_a_fault_of_the_rules() -> None:
    game = load_text(DEEPENING, "deepening.kif")
    state = game.initial_state()
    for _ in range(7):
        state = game.next_state(state, ("wait", "wait"))
    with pytest.raises(GameFault) as caught:
        game.legal_moves(state, 0)
    assert "fault of the rules: red has a legal move that no player can send" in str(caught.value)
    assert "nested 71 deep (at most 62)" in str(caught.value)
    # Its facts are as deep: shown as they are, not drawn.
    assert "(t (f (f" in game.render(state)


def test_a_legal_move_longer_than_a_line_is_a_fault_of_the_rules() -> None:
    assert MOVE_LIMIT == LINE_LIMIT  # what a player's line holds
    name = "x" * MOVE_LIMIT
    game = load_text(
        f"(role a) (init s) (<= (legal a (m {name})) (true s)) (<= (legal a stay) (true s))"
        " (<= (next s) (true s)) (<= terminal (not (true s))) (<= (goal a 0) (true s))",
        "long.kif",
    )
    assert game.reasoner.complete
    with pytest.raises(GameFault, match=r"can send, \(m x+\.\.\. of 65,540 bytes"):
        game.legal_moves(game.initial_state(), 0)


def test_a_fault_quotes_a_huge_state_within_a_bounded_line() -> None:
    # The first state holds the move's 64 KiB name and 1,000 other facts: the fault's line
    # quotes enough of each to know the state, never the whole of it.
    name = "x" * MOVE_LIMIT
    numbers = " ".join(f"(init (n {i}))" for i in range(1000))
    game = load_text(
        f"(role a) (init (c {name})) {numbers} (<= (legal a (m ?x)) (true (c ?x)))"
        " (<= (next (c ?x)) (true (c ?x))) (<= terminal (true (c none)))"
        " (<= (goal a 0) (true (c none)))",
        "huge.kif",
    )
    with pytest.raises(GameFault) as caught:
        game.legal_moves(game.initial_state(), 0)
    said = str(caught.value)
    assert len(said) < 5000, len(said)
    assert "in state {(c " + "x" * 197 + "... of 65,540 characters (n 0) (n 1) " in said
    assert re.search(r" \(n \d+\) \.\.\. [\d,]+ more facts\}$", said), said[-200:]


def test_bad_limits_are_refused(tmp_path: Path) -> None:
    # Below 256 MiB the child cannot start, which would pass for a fault of the rules.
    with pytest.raises(ConfigError, match=r"state_memory_mb: 255 MiB is not in \[256, 1048576\]"):
        StateLimits(memory_mb=255)
    with pytest.raises(ConfigError, match="state_memory_mb"):
        StateLimits(memory_mb=10**23)
    with pytest.raises(ConfigError, match="state_seconds"):
        StateLimits(seconds=0)
    # A config's line is named.
    config = write_config(tmp_path, {"a": "random"}, extra="state_memory_mb: 100000000000000\n")
    with pytest.raises(ConfigError, match=r"cup.yaml:\d+: state_memory_mb: must be less than"):
        load_config(config)


def _random_seats(tmp_path: Path, game: GdlGame) -> list:
    return [
        make_player(player_spec("random", role), tmp_path / f"{role}.log") for role in game.roles
    ]


@pytest.mark.slow
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


def _played(tmp_path: Path, game: GdlGame) -> Path:
    """A match of random players, its transcript signed in tmp_path/results."""
    out = tmp_path / "results" / "m.json"
    key, _ = results_key(out.parent, None)
    setup = MatchSetup("m1", game, _random_seats(tmp_path, game), Clocks(), Policy.FORFEIT, 7)
    asyncio.run(play_fresh(setup, out, key))
    return out


def _tampered(tmp_path: Path, source: Path, change) -> Path:
    data = json.loads(source.read_text())
    data.pop("signature")
    change(data)
    path = tmp_path / "tampered.json"
    path.write_text(json.dumps(data))
    return path


def _verdict(tmp_path: Path, source: Path, change) -> FileVerdict:
    """The verdict on the transcript `source` changed by `change`; the changed file removed."""
    path = _tampered(tmp_path, source, change)
    try:
        return verify_file(path)
    finally:
        path.unlink()


def _problem(verdict: FileVerdict) -> str:
    assert verdict.outcome is Outcome.FAILED
    assert verdict.replayed is not None and verdict.replayed.problem is not None
    return str(verdict.replayed.problem)


@pytest.mark.slow
def test_verifying_a_rules_fault_checks_it_against_the_rules(tmp_path: Path) -> None:
    out = _played(tmp_path, exploding(StateLimits(memory_mb=4096, seconds=1)))

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

    def own_memory(data: dict) -> None:
        data["state_memory_mb"] = 10

    def one_own_limit(data: dict) -> None:
        data["state_seconds"] = None

    def other_limits(data: dict) -> None:
        data["state_seconds"] = 2

    def later_fault(data: dict) -> None:
        data["faults"] = [{"step": 5, "role": "red", "kind": "timeout", "detail": "late"}]

    def later_step(data: dict) -> None:
        data["steps"].append(dict(data["steps"][-1], step=5))

    def other_detail(data: dict) -> None:
        data["rules_fault"]["detail"] = data["rules_fault"]["detail"].replace("1 s", "2 s")

    expected = {
        earlier: "rules_fault: at state 3, but the match ends after step 4",
        ended: "end: recorded as terminal, but the rules failed the match",
        no_fault: "step 4: the rules fail at this state",
        memory: "rules_fault: state_memory_mb: 10 MiB is not in [256, 1048576]",
        own_memory: "state_limits: state_memory_mb: 10 MiB is not in [256, 1048576]",
        one_own_limit: "state_limits: one limit of a state recorded without the other",
        other_limits: "rules_fault: its limits of a state are not the match's",
        later_fault: "step 5: red: a fault at a step that was never played",
        # Once the rules fail at a state, no move is played from it.
        later_step: "rules_fault: at state 4, but the match ends after step 5",
        # Passed here too, the limit gives its own text.
        other_detail: "rules_fault: state 4 passes its time limit here with another detail:",
    }
    for change, what in expected.items():
        problem = _problem(_verdict(tmp_path, out, change))
        assert problem.startswith(what), (change.__name__, problem)
    # The match recorded the limits its states had, and a replay computes its states within
    # them, whatever they were: not within the defaults, which a slow state of a match given
    # more time may pass on a busy machine, nor within those of a fault it may not have.
    played = read_transcript(out)
    assert (played.state_memory_mb, played.state_seconds) == (4096, 1)
    assert recorded_limits(played) == StateLimits(memory_mb=4096, seconds=1)
    ended_well = dataclasses.replace(played, rules_fault=None, state_seconds=300.0)
    assert recorded_limits(ended_well) == StateLimits(memory_mb=4096, seconds=300)


@pytest.mark.slow
def test_a_rules_fault_claimed_of_a_state_that_computes_is_caught(tmp_path: Path) -> None:
    out = _played(tmp_path, exploding(StateLimits(memory_mb=4096, seconds=1)))

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
    # Such a note is of a fault the limits could have given: a line that names its limit.
    data["rules_fault"]["detail"] = "x" * 10_000_000 + " (state_seconds)"
    (tmp_path / "tampered.json").write_text(json.dumps(data))
    problem = _problem(verify_file(tmp_path / "tampered.json"))
    assert problem == (
        "rules_fault: a detail of 10,000,016 characters, where one the replay does not"
        " reproduce has at most 1,000"
    )
    data["rules_fault"]["detail"] = "exploding.kif: the rules are too slow"
    (tmp_path / "tampered.json").write_text(json.dumps(data))
    problem = _problem(verify_file(tmp_path / "tampered.json"))
    assert problem == "rules_fault: past its time limit, but its detail names no state_seconds"
    (tmp_path / "tampered.json").unlink()


@pytest.mark.slow
def test_which_limit_a_state_passes_first_depends_on_the_machine_and_is_noted(
    tmp_path: Path,
) -> None:
    out = _played(tmp_path, exploding(StateLimits(memory_mb=4096, seconds=1)))
    detail = json.loads(out.read_text())["rules_fault"]["detail"]
    timed = "does not ground within 1 s (state_seconds)"
    assert detail.endswith(timed)

    def memory(data: dict) -> None:
        # A faster machine reaches the memory cap before the deadline: its own text.
        said = detail.replace(timed, "needs more than 4 GiB to ground (state_memory_mb)")
        data["rules_fault"].update(limit="memory", detail=said)

    verdict = _verdict(tmp_path, out, memory)
    assert verdict.outcome is Outcome.VERIFIED, verdict.problem
    assert verdict.replayed is not None
    assert str(verdict.replayed.note).startswith(
        "state 4 passes its time limit here, its memory limit on the match's machine"
    )

    def memory_in_name_only(data: dict) -> None:
        data["rules_fault"]["limit"] = "memory"

    problem = _problem(_verdict(tmp_path, out, memory_in_name_only))
    assert problem == "rules_fault: past its memory limit, but its detail names no state_memory_mb"

    def as_written(data: dict) -> None:
        # Computed on a faster machine, the state might have had no goal: it cannot be told.
        said = detail.replace(timed, "fault of the rules: red has no goal")
        data["rules_fault"].update(limit=None, detail=said)

    verdict = _verdict(tmp_path, out, as_written)
    assert verdict.outcome is Outcome.VERIFIED, verdict.problem
    assert verdict.replayed is not None
    assert str(verdict.replayed.note).startswith(
        "state 4 passes its time limit here, so the fault of the rules recorded there cannot be"
        " checked"
    )


def _no_goal(tmp_path: Path, grows: bool) -> GdlGame:
    """A game wrong as written: over after two steps, with no goal for either role. Its items
    grow as the exploding game's do, so that it is played one state at a time; or, when it
    does not grow, they stay one, and its whole program is compiled."""
    path = tmp_path / "nogoal.kif"
    path.write_text(
        "(role red) (role blue) (init (item z)) (init (step 0)) (succ 0 1) (succ 1 2)\n"
        "(<= (legal ?r (pick ?x)) (role ?r) (true (item ?x)))\n"
        "(<= (next (item ?x)) (true (item ?x)))\n"
        + ("(<= (next (item (f ?x ?y))) (true (item ?x)) (true (item ?y)))\n" if grows else "")
        + "(<= (next (step ?m)) (true (step ?n)) (succ ?n ?m))\n"
        "(<= terminal (true (step 2)))\n"
        "(<= (goal ?r 100) (role ?r) (true (step 3)))\n"
    )
    return load_rulesheet(path, StateLimits(memory_mb=512, seconds=5))


@pytest.mark.slow
def test_a_fault_of_the_rules_as_written_is_recorded_word_for_word(tmp_path: Path) -> None:
    game = _no_goal(tmp_path, grows=True)
    assert game.state_limits == StateLimits(memory_mb=512, seconds=5)
    out = _played(tmp_path, game)
    fault = read_transcript(out).rules_fault
    assert fault is not None
    assert (fault.step, fault.limit, fault.state_memory_mb, fault.state_seconds) == (
        2,
        None,
        512,
        5.0,
    )
    assert "red has no goal; blue has no goal" in fault.detail
    verdict = verify_file(out)
    assert verdict.outcome is Outcome.VERIFIED, verdict.problem
    assert verdict.replayed is not None and verdict.replayed.note is None

    def timed(data: dict) -> None:
        said = f"{game.path}: a state does not ground within 5 s (state_seconds)"
        data["rules_fault"].update(limit="time", detail=said)

    def reworded(data: dict) -> None:
        data["rules_fault"]["detail"] = fault.detail.replace("red has no goal", "red has goal 0")

    expected = {
        # Every machine finds the same fault of the rules: it is not a limit's.
        timed: "rules_fault: recorded as past its time limit, but the rules fail at state 2 as"
        " written: ",
        reworded: "rules_fault: the rules fail at state 2 with another detail: ",
    }
    for change, what in expected.items():
        problem = _problem(_verdict(tmp_path, out, change))
        assert problem.startswith(what), (change.__name__, problem)


def test_no_limit_is_recorded_for_a_game_compiled_whole(tmp_path: Path) -> None:
    game = _no_goal(tmp_path, grows=False)
    assert game.state_limits is None
    out = _played(tmp_path, game)
    fault = read_transcript(out).rules_fault
    assert fault is not None
    assert (fault.step, fault.limit, fault.state_memory_mb, fault.state_seconds) == (
        2,
        None,
        None,
        None,
    )

    # Whether a game is compiled whole depends on the machine's speed (10 s to ground it):
    # a slower one may have played it one state at a time, under limits, and met one. Its
    # state computes here, so only a deadline can have been passed there.
    def cut(data: dict, limit: str, detail: str) -> None:
        data["steps"].pop()
        data["rules_fault"].update(
            step=1, limit=limit, detail=detail, state_memory_mb=512, state_seconds=5.0
        )

    def timed(data: dict) -> None:
        cut(data, "time", f"{game.path}: a state does not ground within 5 s (state_seconds)")

    def out_of_memory(data: dict) -> None:
        cut(data, "memory", f"{game.path}: a state needs more than 512 MiB to ground")

    verdict = _verdict(tmp_path, out, timed)
    assert verdict.outcome is Outcome.VERIFIED, verdict.problem
    assert verdict.replayed is not None and verdict.replayed.note is not None
    assert verdict.replayed.note.startswith("state 1 computes here (the game compiled whole)")
    problem = _problem(_verdict(tmp_path, out, out_of_memory))
    assert (
        problem == "rules_fault: state 1 computes here, yet it is recorded as past its memory limit"
    )


def test_no_limit_can_be_recorded_for_a_built_in_game(tmp_path: Path) -> None:
    game = get_game("ticblock")
    out = tmp_path / "results" / "m.json"
    key, _ = results_key(out.parent, None)
    seats = [make_player(player_spec("random", r), tmp_path / f"{r}.log") for r in game.roles]
    asyncio.run(play_fresh(MatchSetup("m1", game, seats, Clocks(), Policy.FORFEIT, 7), out, key))

    def timed(data: dict) -> None:
        del data["steps"][2:]
        data["end_reason"], data["goals"] = "aborted", None
        data["rules_fault"] = {"step": 2, "detail": "slow", "limit": "time"}

    unlimited = "the states of ticblock are computed under no limits"
    assert (
        _problem(_verdict(tmp_path, out, timed))
        == f"rules_fault: past its time limit, but {unlimited}"
    )


@pytest.mark.slow
def test_another_managers_match_that_the_rules_failed_imports_with_its_rules_fault(
    tmp_path: Path,
) -> None:
    # Time enough that only the memory limit ends the state, however busy the machine.
    out = _played(tmp_path, exploding(StateLimits(memory_mb=512, seconds=300)))
    match = ggp_exported(tmp_path, json.loads(out.read_text()), "m")
    del match["x-referee-transcript"]
    assert match["isAborted"] and len(match["moves"]) == 4
    limits = ("--rules", str(EXPLODING), "--state-memory-mb", "512", "--state-seconds", "300")
    result, imported = ggp_imported(tmp_path, match, "m", *limits)
    assert result.exit_code == 0, result.output
    # Computed again by the import, under the limits it was given and the rules' own name.
    fault = read_transcript(imported).rules_fault
    assert fault == RulesFault(
        4,
        f"{EXPLODING}: a state needs more than 512 MiB to ground (state_memory_mb)",
        "memory",
        512,
        300,
    )
    verdict = verify_file(imported)
    assert verdict.outcome is Outcome.VERIFIED, verdict.problem
    # Aborted where the rules compute the state: the manager's reason, not the rules'.
    match["moves"].pop()
    result, imported = ggp_imported(tmp_path, match, "m", *limits)
    assert result.exit_code == 0, result.output
    assert read_transcript(imported).rules_fault is None


@pytest.mark.slow
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


@pytest.mark.slow
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
    play = ["play", str(EXPLODING), *SEATS, "--out", str(out)]
    # Time enough that only the memory limit ends the state, however busy the machine.
    play += ["--state-seconds", "300"]
    done = subprocess.run(
        [sys.executable, "-c", wrapper, *play],
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


@pytest.mark.slow
def test_serve_ends_a_match_whose_rules_blow_up_and_goes_on_serving(tmp_path: Path) -> None:
    start = format_request(Start("m1", "red", one_line(EXPLODING.read_text()), 120, 30))
    output: list[str] = []
    with served(
        tmp_path, "referee/players/starters/random_player.py", "--state-seconds", "2", said=output
    ) as port:
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


# State 5 joins three of its 1806 items with little memory: it takes minutes, not GiB.
SLOW = """
    (role red) (role blue) (init (item z)) (init (step 0))
    (succ 0 1) (succ 1 2) (succ 2 3) (succ 3 4) (succ 4 5) (succ 5 6) (succ 6 7) (succ 7 8)
    (<= (legal ?r (pick ?x)) (role ?r) (true (item ?x)))
    (<= (next (item ?x)) (true (item ?x)))
    (<= (next (item (f ?x ?y))) (true (item ?x)) (true (item ?y)))
    (<= (next (step ?m)) (true (step ?n)) (succ ?n ?m))
    (<= some (true (item ?x)) (true (item ?y)) (true (item ?z)) (distinct (g ?x ?y) (g ?z ?z)))
    (<= terminal (true (step 8)))
    (<= terminal some (true (step 9)))
    (<= (goal ?r 50) (role ?r))
"""
# `referee` with the whole grounding given up after 1 s, as the quick_load fixture does here.
QUICK_REFEREE = (
    "import sys\n"
    "from referee.games.gdl import ground\n"
    "ground.WHOLE_SECONDS = 1.0\n"
    "from referee.cli import main\n"
    "sys.argv = ['referee', *sys.argv[1:]]\n"
    "main()\n"
)


def _reasoner_children(parent: int) -> list[int]:
    """The per-state reasoner children of a process."""
    processes = stats_of(int(entry.name) for entry in os.scandir("/proc") if entry.name.isdigit())
    found = []
    for pid in (pid for pid, fields in processes if int(fields[1]) == parent):
        with contextlib.suppress(OSError):  # gone since
            if b"remote_child" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(pid)
    return found


@contextlib.contextmanager
def computing_state_5(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """`referee play` of SLOW, once its reasoner child is computing state 5 (with 25 s for
    it), and that child. Not more: the match's transcript is verified after the test, and
    its replay computes state 5 too, within the same limit."""
    rules = tmp_path / "slow.kif"
    rules.write_text(SLOW)
    seats = ("-p", "red=random", "-p", "blue=random", "--state-seconds", "25")
    process = subprocess.Popen(
        [sys.executable, "-c", QUICK_REFEREE, "play", str(rules), *seats],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        # As at a terminal: a suite run in the background of a script (`make test &`)
        # inherits SIGINT ignored, and a Python started so keeps ignoring it.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if line.startswith("step 4:"):
                break
        children = _reasoner_children(process.pid)
        assert len(children) == 1, children
        yield process, children[0]
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()


def _gone(pid: int, seconds: float) -> bool:
    """Whether a process (no child of this one) has ended within `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = stats_of([pid])
        if not found or found[0][1][0] == b"Z":  # a zombie has ended, unreaped
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("signal_number", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.slow
def test_ctrl_c_or_sigterm_give_up_a_state_being_computed(
    tmp_path: Path, signal_number: int
) -> None:
    with computing_state_5(tmp_path) as (process, child):
        time.sleep(1)  # into the state's grounding
        process.send_signal(signal_number)
        # Its 25 s are not waited out (24 s from here): the question is given up, the child
        # killed.
        process.wait(timeout=15)
        assert _gone(child, 10)
    # Recorded as aborted, no fault of the rules' or the players': it verifies (with a note
    # that the state fails within the default limits) by the autouse fixture.
    (out,) = (tmp_path / "matches" / "results").glob("*.json")
    transcript = read_transcript(out)
    assert transcript.end_reason == "aborted" and transcript.rules_fault is None
    assert transcript.faults == []


def slow_game() -> tuple[GdlGame, list[State], JointMove]:
    """SLOW computed one state at a time with 300 s a state, its states up to 4, and a joint
    move from state 4 (the next state takes minutes to ground, under the default memory)."""
    game = load_text(SLOW, "slow.kif", StateLimits(seconds=300))
    assert isinstance(game.reasoner, RemotePerState)
    states = [state for state in first_states(game) if isinstance(state, int)]
    joint = tuple(game.legal_moves(states[4], role)[0] for role in range(2))
    return game, states, joint


@pytest.mark.slow
def test_a_query_given_up_between_two_of_its_questions_asks_the_second_in_vain() -> None:
    # The give-up lands after the first question's answer was read, as it can when Ctrl-C
    # comes just then: the query's next question, state 5, ends at once; it is not asked of
    # a new child that would take its 300 s.
    game, states, joint = slow_game()
    given_up = threading.Event()
    began = time.monotonic()
    with game.asked(given_up), pytest.raises(OutOfTime):
        game.next_state(states[2], tuple(game.legal_moves(states[2], r)[0] for r in range(2)))
        given_up.set()
        game.interrupt()
        game.next_state(states[4], joint)
    assert time.monotonic() - began < 60


@pytest.mark.slow
def test_a_query_given_up_while_it_waits_ends_and_the_next_is_answered() -> None:
    game, states, joint = slow_game()
    cancelled: list[bool] = []

    async def give_up_state_5() -> None:
        asked = asyncio.create_task(computed(game, game.next_state, states[4], joint))
        await asyncio.sleep(1)  # into the state's grounding
        assert not asked.done()
        asked.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asked
        cancelled.append(asked.cancelled())

    began = time.monotonic()
    asyncio.run(give_up_state_5())  # which waits for the thread of the query given up
    assert cancelled == [True]
    assert time.monotonic() - began < 60
    # The next question is answered, by a new child, a wake for a query given up before it
    # notwithstanding (a state's items do not depend on the moves).
    game.interrupt()
    assert (
        game.next_state(states[3], tuple(game.legal_moves(states[3], r)[0] for r in range(2)))
        == states[4]
    )


@pytest.mark.slow
def test_a_reasoner_child_ends_soon_after_its_referee_is_killed(tmp_path: Path) -> None:
    with computing_state_5(tmp_path) as (process, child):
        process.kill()
        process.wait()
        assert _gone(child, 20)
