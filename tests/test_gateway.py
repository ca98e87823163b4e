"""`referee serve`: a line-protocol program as a GGP player, played by the referee itself
and spoken to as GGP managers speak."""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import random
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from referee.clock import Clocks
from referee.games import GAMES, Game, as_gdl, get_game
from referee.gateway import Gateway, serve
from referee.ggp import messages as ggp
from referee.ggp.door import PER_ADDRESS
from referee.ggp.messages import Start, format_request
from referee.match import MatchSetup, play_fresh
from referee.players.builtin import make_player, player_spec
from referee.policy import Policy
from referee.records.signing import results_key
from tests.support.gateway import HANG_GUARD_S, ask, served
from tests.support.paths import EXAMPLES, ROOT, RULES

pytestmark = pytest.mark.usefixtures("every_transcript_verifies")


def play(tmp_path: Path, game: Game, port: int, seat: int) -> None:
    """A match of `game` with the served program in `seat` and random elsewhere: it must be
    played to its end without a fault."""
    players = [
        make_player(
            player_spec(f"http://127.0.0.1:{port}" if index == seat else "random", f"p{index}"),
            tmp_path / f"{game.id}.{index}.log",
        )
        for index in range(len(game.roles))
    ]
    out = tmp_path / f"{game.id}-{seat}.json"
    setup = MatchSetup(f"{game.id}-{seat}", game, players, Clocks(10_000, 1_000), Policy.FORFEIT)
    key, _ = results_key(tmp_path, None)
    transcript = asyncio.run(asyncio.wait_for(play_fresh(setup, out, key), HANG_GUARD_S))
    assert transcript.end_reason == "terminal", transcript.faults
    assert transcript.faults == []


@pytest.mark.parametrize("game_id", [*GAMES, "tictactoe"])
@pytest.mark.slow
def test_a_served_program_plays_every_built_in_game_and_a_gdl_game(
    tmp_path: Path, game_id: str
) -> None:
    game = GAMES.get(game_id) or get_game(str(EXAMPLES / f"{game_id}.kif"))
    with served(tmp_path) as port:
        for seat in range(len(game.roles)):
            play(tmp_path, game, port, seat)


@pytest.mark.slow
def test_a_served_program_is_busy_with_one_match_and_answers_every_request_form(
    tmp_path: Path,
) -> None:
    rules = as_gdl(get_game("ticblock")).one_line
    start = format_request(Start("m1", "xcplayer", rules, 10, 2))
    with served(tmp_path) as port:
        assert ask(port, "(INFO)") == (200, "((name random_player) (status available))")
        assert ask(port, "", "OPTIONS") == (200, "")
        assert ask(port, start) == (200, "ready")
        assert ask(port, start.replace("m1", "m2")) == (200, "busy")
        assert ask(port, "(info)", "GET") == (200, "((name random_player) (status busy))")
        status, move = ask(port, "(PLAY m1 NIL)", "GET")
        assert status == 200 and re.fullmatch(r"\(mark [123] [123]\)", move), move
        # Not the match played here: ggp-base's players answer `busy`, never a 400 whose
        # text a manager would read as the move.
        for unknown in ("(PLAY m2 NIL)", "(STOP m2 NIL)", "(ABORT m2)"):
            assert ask(port, unknown) == (200, "busy")
        status, said = ask(port, "(PLAY m1 ((mark 9 9) noop))")
        assert status == 400 and "(mark 9 9)" in said
        assert ask(port, "((((")[0] == 400
        assert ask(port, "(ABORT m1)") == (200, "aborted")
        assert ask(port, "(INFO)") == (200, "((name random_player) (status available))")
        assert ask(port, start.replace("m1", "m3")) == (200, "ready")


@pytest.mark.slow
def test_a_request_that_never_ends_does_not_hold_the_player(tmp_path: Path) -> None:
    with served(tmp_path) as port, socket_to(port) as stalled:
        stalled.sendall(b"POST / HTTP/1.0\r\nContent-Length: 100\r\n\r\n(INF")
        # Another manager is still answered while the first request waits for its end.
        assert ask(port, "(INFO)")[0] == 200


@contextlib.contextmanager
def socket_to(port: int) -> Iterator[socket.socket]:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        yield connection


@pytest.mark.slow
def test_serve_refuses_a_port_in_use(tmp_path: Path) -> None:
    with served(tmp_path) as port:
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "referee",
                "serve",
                "referee/players/starters/random_player.py",
                "--port",
                str(port),
                "--logs",
                str(tmp_path / "logs2"),
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_a_match_id_cannot_put_the_log_outside_the_logs_directory(tmp_path: Path) -> None:
    rules = as_gdl(get_game("ticblock")).one_line
    start = format_request(Start("../../escape", "xcplayer", rules, 10, 2))
    # A player that writes to its log: a log is made at its first byte.
    talker = f"{sys.executable} tests/players/misbehaving.py environment"
    with served(tmp_path, talker) as port:
        assert ask(port, start) == (200, "ready")
        assert ask(port, "(ABORT ../../escape)") == (200, "aborted")
    assert [path.name for path in (tmp_path / "logs").iterdir()] == [".._.._escape.log"]
    assert not (tmp_path.parent / "escape.log").exists()


@pytest.mark.slow
def test_a_fault_of_the_rules_a_manager_sent_ends_the_match_on_the_players_side(
    tmp_path: Path,
) -> None:
    # After one step the only role has no legal move: the rules, not the request, are wrong,
    # and without a state there is no move to answer with, not even a random one.
    rules = "(role r) (init (at 0)) (<= (legal r go) (true (at 0))) (<= (next (at 1)) (does r go))"
    said: list[str] = []
    with served(tmp_path, said=said) as port:
        assert ask(port, format_request(Start("m1", "r", rules, 10, 2))) == (200, "ready")
        assert ask(port, "(PLAY m1 NIL)") == (200, "go")
        assert ask(port, "(PLAY m1 (go))") == (200, "busy")
        assert ask(port, "(INFO)") == (200, "((name random_player) (status available))")
        assert ask(port, "(ABORT m1)") == (200, "busy")  # a match no longer played here
    assert "m1: aborted" in said, said  # no goals: the match has none


@pytest.mark.slow
def test_a_play_that_reaches_the_end_ends_the_match_and_is_refused(tmp_path: Path) -> None:
    # A manager should STOP at the game's end; one that sends PLAY there is told that no
    # move exists, and the program is sent the game's end, never a `go` without moves.
    rules = (
        "(role red) (role blue) (init (step 0)) (succ 0 1) (succ 1 2)"
        " (<= (legal ?r go) (role ?r)) (<= (legal ?r stay) (role ?r))"
        " (<= (next (step ?m)) (true (step ?n)) (succ ?n ?m))"
        " (<= terminal (true (step 2))) (<= (goal ?r 50) (role ?r))"
    )
    trace = tmp_path / "trace.txt"
    said: list[str] = []
    with served(
        tmp_path, "referee/players/starters/random_player.py", "--trace", str(trace), said=said
    ) as port:
        assert ask(port, format_request(Start("m9", "red", rules, 10, 2))) == (200, "ready")
        assert ask(port, "(PLAY m9 NIL)")[0] == 200
        assert ask(port, "(PLAY m9 (go go))")[0] == 200
        status, answer = ask(port, "(PLAY m9 (go go))")
        assert (status, answer) == (
            400,
            "m9: the game is over at state 2, so there is no move to play;"
            " the match has ended here with its goals",
        )
        assert ask(port, "(INFO)") == (200, "((name random_player) (status available))")
        assert ask(port, "(STOP m9 (go go))") == (200, "busy")  # no longer played here
    to_program = [
        line.split(" > ", 1)[1] for line in trace.read_text().splitlines() if " > " in line
    ]
    assert to_program[-3:] == ["moves 2 go go", "end 50 50 terminal", "quit"]
    assert not [line for line in said if "Traceback" in line or "Unhandled" in line], said
    assert "m9: terminal, goals 50 50" in said


@pytest.mark.slow
def test_a_stop_before_the_end_ends_the_match_without_goals(tmp_path: Path) -> None:
    # Not terminal: the rules give no goals there (here none at all), which is no fault.
    rules = "(role r) (init (at 0)) (<= (legal r go) (true (at 0))) (<= terminal (true (at 1)))"
    said: list[str] = []
    with served(tmp_path, said=said) as port:
        assert ask(port, format_request(Start("m1", "r", rules, 10, 2))) == (200, "ready")
        assert ask(port, "(STOP m1 NIL)") == (200, "done")
        assert ask(port, "(INFO)") == (200, "((name random_player) (status available))")
    ended = said.index("m1: stopped at state 0, before its end")
    assert said[ended + 1] == "m1: aborted", said


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
@pytest.mark.slow
def test_serving_stopped_in_a_match_ends_it_and_its_program_without_an_error(
    tmp_path: Path, stop: signal.Signals
) -> None:
    rules = "(role r) (init (at 0)) (<= (legal r go) (true (at 0))) (<= terminal (true (at 1)))"
    said: list[str] = []
    with served(tmp_path, said=said, stop=stop) as port:
        assert ask(port, format_request(Start("m1", "r", rules, 10, 2))) == (200, "ready")
    assert not [line for line in said if "Traceback" in line or "error" in line], said


@pytest.mark.slow
def test_a_flood_of_connections_is_dropped_beyond_a_bound(tmp_path: Path) -> None:
    with served(tmp_path) as port, contextlib.ExitStack() as stack:
        stalled = [stack.enter_context(socket_to(port)) for _ in range(PER_ADDRESS)]
        for connection in stalled:
            connection.sendall(b"POST / HTTP/1.0\r\nContent-Length: 100\r\n\r\n(INF")
        # Once the server has taken them all in (each waits up to 10 s for its end), it is
        # full for this address: a further connection from it is dropped unanswered.
        assert _dropped_within(port, 8), "a connection beyond the bound was answered"
        for connection in stalled:
            connection.close()
        deadline = time.monotonic() + 30
        while True:
            try:
                assert ask(port, "(INFO)")[0] == 200
                break
            except (http.client.RemoteDisconnected, ConnectionError):
                assert time.monotonic() < deadline, "the closed connections were never freed"
                time.sleep(0.1)


def _dropped_within(port: int, seconds: float) -> bool:
    """Whether an INFO is dropped unanswered within `seconds`, asking again until it is."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            ask(port, "(INFO)")
        except (http.client.RemoteDisconnected, ConnectionError):
            return True
        time.sleep(0.05)
    return False


def test_serve_refuses_a_ggp_player_for_a_program(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "referee", "serve", "http://127.0.0.1:9", "--port", "0"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr == (
        "referee: error: serve runs a program; http://127.0.0.1:9 is a GGP player already\n"
    )


def test_a_match_found_abandoned_by_requests_at_once_is_ended_once(tmp_path: Path) -> None:
    # Each request first ends a match whose manager went silent; three arriving together
    # all find it abandoned, and only the first may end it.
    said: list[str] = []
    rules = "(role r) (init (at 0)) (<= (legal r go) (true (at 0))) (<= terminal (true (at 1)))"

    async def trial() -> list[str]:
        gateway = Gateway(player_spec("random"), "random", tmp_path, said.append)
        try:
            assert await gateway.answer(Start("m1", "r", rules, 10, 2)) == "ready"
            hosted = gateway.hosted
            assert hosted is not None
            hosted.last_heard -= 1e6
            send = hosted.player.send

            async def slow_send(line: str, timeout_s: float) -> None:
                await asyncio.sleep(0.1)  # a pipe that takes the `end` line only later
                await send(line, timeout_s)

            hosted.player.send = slow_send  # type: ignore[method-assign]
            return await asyncio.gather(*(gateway.answer(ggp.Info()) for _ in range(3)))
        finally:
            await gateway.close()

    infos = asyncio.run(asyncio.wait_for(trial(), HANG_GUARD_S))
    assert infos == ["((name random) (status available))"] * 3
    assert said.count("m1: abandoned by its manager") == 1, said
    assert said.count("m1: aborted") == 1, said


def test_a_request_that_meets_a_bug_is_answered_500_and_serving_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    said: list[str] = []
    gateway = Gateway(player_spec("random"), "random", tmp_path, said.append)

    async def broken(request: ggp.Request) -> str:
        if isinstance(request, ggp.Preview):
            raise KeyError("a bug")
        return "ready"

    monkeypatch.setattr(gateway, "answer", broken)

    async def trial() -> tuple[tuple[int, str], tuple[int, str]]:
        server = await serve(gateway, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with server:
            first = await asyncio.to_thread(ask, port, "(PREVIEW ((role r)) 10)")
            second = await asyncio.to_thread(ask, port, "(INFO)")
            return first, second

    first, second = asyncio.run(asyncio.wait_for(trial(), HANG_GUARD_S))
    assert first == (500, "internal error")
    assert second == (200, "ready")
    assert said == ["failed on a request from 127.0.0.1: KeyError: 'a bug'"]


# The moves of rulesheets whose names are not all lower case, as each spells them: what a
# manager that matches moves case and all (ggp-base's GameServer) takes as legal.
SPELLED = {
    "snake2p": {"moveUp", "moveDown", "moveLeft", "moveRight"},
    "bomberman2p": {
        *(f"(move {way})" for way in ("north", "south", "east", "west", "nowhere")),
        "dropBomb",
    },
    "ghostMaze2p": {
        *(f"(move {way})" for way in ("north", "south", "east", "west", "nowhere")),
        "dropSlime",
    },
    "ticTacToe": {*(f"(mark {x} {y})" for x in "123" for y in "123"), "noop"},
}


def game_server(port: int, name: str, seat: int) -> int:
    """A match of rulesheet `name` against the served program in `seat`, driven as ggp-base's
    GameServer drives a player: START with the rulesheet as written (its comments dropped,
    its spelling kept), PLAY with the last joint move in that spelling, STOP at the end. Every
    answer must be `200` and, to PLAY, one of the rulesheet's moves in its own spelling (a
    random one stands for the other roles). The number of PLAYs answered."""
    path = RULES / f"{name}.kif"
    text = re.sub(r";[^\n]*", "", path.read_text())
    spelled = {move.lower(): move for move in SPELLED[name]}
    game = get_game(str(path))
    rng = random.Random(seat)
    match_id = f"Base.{name}.{seat}"
    role = re.findall(r"\(role (\w+)\)", text)[seat]
    start = f"(START {match_id} {role} ({' '.join(text.split())}) 30 5)"
    assert ask(port, start) == (200, "ready")
    state, last, plays = game.initial_state(), "NIL", 0
    while not game.is_terminal(state):
        status, answer = ask(port, f"(PLAY {match_id} {last})")
        plays += 1
        assert status == 200, answer
        assert answer in SPELLED[name], f"{answer!r} is not one of {name}'s moves as spelled"
        joint = [
            answer.lower() if index == seat else rng.choice(game.legal_moves(state, index))
            for index in range(len(game.roles))
        ]
        assert joint[seat] in game.legal_moves(state, seat), answer
        state = game.next_state(state, tuple(game.parse_move(move) for move in joint))
        last = "(" + " ".join(spelled[move] for move in joint) + ")"
    assert ask(port, f"(STOP {match_id} {last})") == (200, "done")
    return plays


@pytest.mark.corpus
@pytest.mark.parametrize("name", ["snake2p", "bomberman2p", "ghostMaze2p", "ticTacToe"])
@pytest.mark.slow
def test_serve_answers_each_move_as_the_managers_rulesheet_spells_it(
    tmp_path: Path, name: str
) -> None:
    with served(tmp_path) as port:
        for seat in (0, 1):
            assert game_server(port, name, seat) > 0


@pytest.mark.slow
def test_a_forced_move_is_answered_in_the_rulesheets_spelling(tmp_path: Path) -> None:
    rules = (
        "(role Red) (init (At 0)) (<= (legal Red (Wait Here)) (true (At 0)))"
        " (<= (next (At 1)) (does Red (Wait Here))) (<= terminal (true (At 1)))"
        " (<= (goal Red 100) (true (At 1)))"
    )
    with served(tmp_path) as port:
        assert ask(port, f"(START Base.Waiting.1 Red ({rules}) 10 2)") == (200, "ready")
        assert ask(port, "(PLAY Base.Waiting.1 NIL)") == (200, "(Wait Here)")
        # What the manager sends is read in any case.
        assert ask(port, "(STOP Base.Waiting.1 ((WAIT here)))") == (200, "done")
