"""GGP players over HTTP: in seats of matches, tournaments and validation, misbehaving, and
a line-protocol program entered as one with `referee serve`."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from referee.cli import app
from referee.clock import Clocks
from referee.errors import FaultKind
from referee.games import get_game
from referee.match import MatchSetup, play_fresh
from referee.players.builtin import make_player, player_spec
from referee.policy import Policy
from referee.records.signing import results_key
from referee.records.transcript import read_transcript
from tests.support.paths import EXAMPLES

pytestmark = pytest.mark.usefixtures("every_transcript_verifies")

HERE = Path(__file__).resolve().parent
GGP_PLAYER = HERE / "players" / "ggp_player.py"
RANDOM_BOT = HERE.parent / "players" / "random_player.py"
# Far beyond what any match here takes: a match that does not end is a failure, not a hang.
HANG_GUARD_S = 120
# Clocks that no answer of the GGP player here comes near, however loaded the machine: its
# START grounds the game's rules, which takes a loaded machine seconds (under two busy loops
# and the suite, more than a start clock of 2 s). A misbehaviour is then found by what the
# player sends, not by when it comes: none of them waits a clock out.
ROOMY = Clocks(start_ms=60_000, play_ms=30_000)
# A misbehaviour judged by the play clock (late, hang) waits it out: a short one.
SHORT_PLAY = Clocks(start_ms=60_000, play_ms=1_000)
runner = CliRunner()


@contextlib.contextmanager
def ggp_player(tmp_path: Path, *args: str) -> Iterator[str]:
    """The URL of a GGP player of the test suite, running until the block ends."""
    portfile = tmp_path / f"port-{len(list(tmp_path.glob('port-*')))}"
    process = subprocess.Popen(
        [sys.executable, str(GGP_PLAYER), str(portfile), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while not portfile.exists():
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            assert time.monotonic() < deadline, "the GGP player did not start"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{portfile.read_text()}"
    finally:
        process.kill()
        process.wait()
        if process.stderr:
            process.stderr.close()


def free_port() -> int:
    """A port nobody listens on (it was free a moment ago)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_ggp_player_plays_a_match_through_referee_play(tmp_path: Path) -> None:
    out = tmp_path / "match.json"
    with ggp_player(tmp_path) as url:
        result = runner.invoke(
            app,
            [
                "play",
                "ticblock",
                "-p",
                f"xcplayer={url}",
                "-p",
                "obplayer=random",
                "--out",
                str(out),
                "--seed",
                "1",
            ],
        )
    assert result.exit_code == 0, result.output
    transcript = read_transcript(out)
    assert transcript.complete and transcript.end_reason == "terminal"
    assert transcript.faults == []
    assert transcript.seats[0].command == [url]
    # Its own moves were played, each timed: at step 1 it alone has a choice.
    assert "xcplayer" in transcript.steps[0].times_ms


def test_a_ggp_player_plays_a_gdl_game_of_three_roles(tmp_path: Path) -> None:
    out = tmp_path / "match.json"
    kif = str(EXAMPLES / "three-in-a-row.kif")
    with ggp_player(tmp_path) as url:
        result = runner.invoke(
            app,
            [
                "play",
                kif,
                "-p",
                f"red={url}",
                "-p",
                "green=random",
                "-p",
                "blue=random",
                "--out",
                str(out),
            ],
        )
    assert result.exit_code == 0, result.output
    transcript = read_transcript(out)
    assert transcript.complete and transcript.faults == []


def test_a_ggp_player_plays_in_a_tournament(tmp_path: Path) -> None:
    config = tmp_path / "t.yaml"
    with ggp_player(tmp_path) as url:
        config.write_text(
            "name: ggp\ngames: [{id: ticblock}, {id: quad}]\n"
            f"players:\n  - {{name: web, url: '{url}'}}\n  - {{name: rnd, command: random}}\n"
            "policy: random\n"
        )
        result = runner.invoke(app, ["tournament", str(config), "--json"])
    assert result.exit_code == 0, result.output
    results = sorted((tmp_path / "results" / "ggp").glob("*.json"))
    transcripts = [read_transcript(path) for path in results]
    assert len(transcripts) == 4
    assert all(t.complete and t.faults == [] for t in transcripts)
    assert all(url in [c for seat in t.seats for c in seat.command] for t in transcripts)


def test_a_url_and_a_command_together_are_refused(tmp_path: Path) -> None:
    config = tmp_path / "t.yaml"
    config.write_text(
        "name: ggp\ngames: [{id: ticblock}]\nplayers:\n"
        "  - {name: web, url: 'http://127.0.0.1:1', command: random}\n"
        "  - {name: rnd, command: random}\n"
    )
    result = runner.invoke(app, ["tournament", str(config)])
    assert result.exit_code == 2
    assert "players[0]: give a player either a command or a url" in result.output


def test_a_ggp_player_passes_validation(tmp_path: Path) -> None:
    with ggp_player(tmp_path) as url:
        result = runner.invoke(
            app,
            [
                "validate",
                url,
                "--games",
                "ticblock,double-tictactoe",
                "--matches-per-role",
                "1",
                "--json",
            ],
        )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["verdict"] == "pass"
    assert report["matches"] == 4
    names = {check["name"] for check in report["checks"]}
    assert {"start", "legal moves", "play clock", "stays up"} <= names
    assert not names & {"quit", "no leftovers", "fresh start", "stderr"}
    # No limit or protection of this machine reaches a server: what it was sent is said.
    assert report["limits"] is None and report["protections"] is None
    assert report["warnings"] == []
    sent = {kind["request"]: kind for kind in report["requests"]}
    assert list(sent) == ["START", "PLAY", "STOP"]
    assert sent["START"]["sent"] == 4 and sent["START"]["answers"] == {"ready": 4}
    assert sent["STOP"]["sent"] == 4 and sent["STOP"]["answers"] == {"done": 4}
    plays = sent["PLAY"]
    assert plays["failures"] == {} and sum(plays["answers"].values()) == plays["sent"]
    (times,) = [check for check in report["checks"] if check["name"] == "response time"]
    # Every PLAY answered a move, forced turns too: each one timed as a response.
    assert f"({plays['sent']} answers)" in times["detail"]
    assert 0 <= plays["median_ms"] <= plays["max_ms"]


def test_validation_of_a_ggp_player_says_what_it_sent_not_the_jail(tmp_path: Path) -> None:
    # Its second PLAY of each match is cut off: the connection closed, no answer.
    with ggp_player(tmp_path, "--fault", "close", "--at", "2") as url:
        args = ["validate", url, "--games", "ticblock", "--matches-per-role", "1"]
        result = runner.invoke(app, args)
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert not [line for line in lines if line.startswith(("limits:", "protections:", "warn"))]
    assert not {"jail", "cgroup", "bubblewrap"} & set(result.stdout.replace(",", " ").split())
    at = lines.index(
        f"checked over HTTP at {url}, a server that no limit or protection of this machine"
        " reaches; sent, answered, in what time:"
    )
    start, play, verdict = lines[at + 1 :]
    assert re.fullmatch(r"    START 2: answered 2 \('ready' 2\); median \d+ ms, max \d+ ms", start)
    found = re.fullmatch(
        r"    PLAY 4: answered 2 \(.+\); no answer 2: closed the connection before its status"
        r" line; median \d+ ms, max \d+ ms",
        play,
    )
    assert found, play
    assert verdict.startswith("verdict: FAIL (stays up); 2 matches in ")


@pytest.mark.parametrize("clock", ["--play-clock", "--start-clock"])
def test_a_ggp_player_cannot_be_told_a_clock_under_a_second(tmp_path: Path, clock: str) -> None:
    result = runner.invoke(
        app,
        [
            "play",
            "ticblock",
            "-p",
            "xcplayer=http://127.0.0.1:9",
            "-p",
            "obplayer=random",
            clock,
            "500",
            "--out",
            str(tmp_path / "m.json"),
        ],
    )
    assert result.exit_code == 2
    assert "told its clocks in whole seconds" in result.output


# What each misbehaviour is recorded as, and at which step (the START is step 0).
MISBEHAVIOURS = {
    "late": (FaultKind.TIMEOUT, 1),
    "hang": (FaultKind.TIMEOUT, 1),
    "garbage": (FaultKind.PROTOCOL, 1),
    "close": (FaultKind.CRASH, 1),
    "illegal": (FaultKind.ILLEGAL, 1),
    "endless": (FaultKind.PROTOCOL, 1),
    "busy": (FaultKind.PROTOCOL, 0),
    "refused": (FaultKind.CRASH, 0),
}


@pytest.mark.parametrize("policy", list(Policy))
@pytest.mark.parametrize("misbehaviour", list(MISBEHAVIOURS))
def test_a_misbehaving_ggp_player_is_named_and_the_match_ends(
    tmp_path: Path, misbehaviour: str, policy: Policy
) -> None:
    kind, step = MISBEHAVIOURS[misbehaviour]
    game = get_game("ticblock")
    out = tmp_path / "match.json"
    with contextlib.ExitStack() as stack:
        if misbehaviour == "refused":
            url = f"http://127.0.0.1:{free_port()}"
        else:
            url = stack.enter_context(ggp_player(tmp_path, "--fault", misbehaviour))
        players = [
            make_player(player_spec(url, "web"), tmp_path / "web.log"),
            make_player(player_spec("random", "random"), tmp_path / "random.log"),
        ]
        clocks = SHORT_PLAY if kind is FaultKind.TIMEOUT else ROOMY
        setup = MatchSetup("m1", game, players, clocks, policy, 7)
        key, _ = results_key(tmp_path, None)
        transcript = asyncio.run(asyncio.wait_for(play_fresh(setup, out, key), HANG_GUARD_S))
    faults = [fault for fault in transcript.faults if fault.role == "xcplayer"]
    assert (faults[0].kind, faults[0].step) == (kind, step), faults[0]
    if policy is Policy.FORFEIT:
        assert transcript.end_reason == "forfeit"
        assert transcript.goals == {"xcplayer": 0, "obplayer": 100}
    else:
        assert transcript.end_reason == "terminal"
        assert step == 0 or faults[0].replacement is not None


@pytest.mark.parametrize("policy", list(Policy))
@pytest.mark.parametrize(
    ("misbehaviour", "kind"), [("illegal", FaultKind.ILLEGAL), ("garbage", FaultKind.PROTOCOL)]
)
def test_a_ggp_players_answer_at_a_forced_step_is_judged_like_any_other(
    tmp_path: Path, misbehaviour: str, kind: FaultKind, policy: Policy
) -> None:
    """As GGP managers record IL and CE where a move is forced: the fault, and the policy."""
    game = get_game("ticblock")
    assert game.legal_moves(game.initial_state(), 1) == ("noop",)  # obplayer waits at step 1
    out = tmp_path / "match.json"
    with ggp_player(tmp_path, "--fault", misbehaviour, "--at", "1") as url:
        players = [
            make_player(player_spec("random", "random"), tmp_path / "random.log"),
            make_player(player_spec(url, "web"), tmp_path / "web.log"),
        ]
        setup = MatchSetup("m1", game, players, ROOMY, policy, 7)
        key, _ = results_key(tmp_path, None)
        transcript = asyncio.run(asyncio.wait_for(play_fresh(setup, out, key), HANG_GUARD_S))
    fault = next(fault for fault in transcript.faults if fault.role == "obplayer")
    assert (fault.kind, fault.step) == (kind, 1)
    if policy is Policy.FORFEIT:
        assert transcript.end_reason == "forfeit"
        assert transcript.goals == {"xcplayer": 100, "obplayer": 0}
    else:
        assert fault.replacement == "noop"
        assert transcript.end_reason == "terminal"
