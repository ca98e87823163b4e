"""URL players take so many matches at once (`capacity:`, default 1): a GGP player is one
server, which answers a second match's START with `busy`, so the tournament never seats one
in more running matches than that."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from referee.errors import ConfigError
from referee.records.signing import results_key
from referee.records.transcript import read_transcript
from referee.tournaments.config import load_config
from referee.tournaments.runner import run_tournament
from referee.tournaments.schedule import Dispatcher, ScheduledMatch, capacities, schedule
from tests.players.ggp_player import Handler, Player, parse
from tests.support.local_http import local_http
from tests.support.tournaments import Recorder, seeded

# Far beyond what the waits here take: a fake that waits this long has found a failure.
HANG_GUARD_S = 60


class Seats:
    """A GGP server that plays any number of matches and counts how many are open at once,
    from START to STOP or ABORT. A START while `meet` are open already is refused with
    `busy`, as ggp-base's players refuse it, and noted as an overlap. With `meet` above 1,
    START is answered only once `meet` matches are open: two that can overlap do."""

    def __init__(self, meet: int = 1) -> None:
        self.meet = meet
        self.open: dict[str, Player] = {}
        self.most = 0
        self.overlaps: list[str] = []
        self.changed = threading.Condition()

    def answer(self, message: str) -> str | tuple[str, str]:
        (request,) = parse(message)
        head, match_id = request[0], request[1] if len(request) > 1 else ""
        if head == "start":
            with self.changed:
                if len(self.open) >= self.meet:
                    self.overlaps.append(f"{match_id} while in {sorted(self.open)}")
                    return "busy"
                self.open[match_id] = player = Player("", 1)
                self.most = max(self.most, len(self.open))
                self.changed.notify_all()
                self.changed.wait_for(lambda: len(self.open) >= self.meet, HANG_GUARD_S)
            return player.answer(message)
        with self.changed:
            player = self.open.get(match_id) if head in ("play", "info") else None
            if head in ("stop", "abort"):
                player = self.open.pop(match_id, None)
        if player is None:
            return "busy"
        return player.answer(message)


def write(tmp_path: Path, url: str, others: int, extra: str = "") -> Path:
    path = tmp_path / "web.yaml"
    entries = "".join(f"  - {{name: p{i}, command: {seeded(i)}}}\n" for i in range(others))
    path.write_text(
        "name: web\nseed: 3\ngames: [ticblock]\nstart_clock: 10000\nplay_clock: 2000\n"
        f"concurrency: 2\nplayers:\n  - name: web\n    url: '{url}'\n{extra}{entries}"
    )
    return path


def play(path: Path) -> Recorder:
    config = load_config(path)
    recorder = Recorder()
    key, _ = results_key(config.output, None)
    asyncio.run(run_tournament(config, key, recorder))
    return recorder


@pytest.mark.usefixtures("every_transcript_verifies")
def test_a_url_player_is_in_one_match_at_a_time_while_others_play_beside(
    tmp_path: Path,
) -> None:
    seats = Seats()
    with local_http(Handler, player=seats) as url:
        path = write(tmp_path, url, others=2)
        recorder = play(path)
    assert seats.overlaps == []
    assert seats.most == 1
    transcripts = [read_transcript(p) for p in (tmp_path / "results" / "web").glob("*-vs-*.json")]
    # 3 pairs x 2 seatings; the p0-p1 pair needs no URL player and may run beside web's.
    assert len(transcripts) == 6
    assert all(t.complete and t.end_reason == "terminal" and t.faults == [] for t in transcripts)
    assert recorder.notes == []


def test_more_concurrency_than_the_url_players_take_is_said_and_not_used(tmp_path: Path) -> None:
    seats = Seats()
    with local_http(Handler, player=seats) as url:
        recorder = play(write(tmp_path, url, others=1))
    assert seats.overlaps == [] and seats.most == 1
    assert recorder.notes == [
        "1 match at a time, not 2: every match seats a URL player, and they take 1 at a time"
        " in all (capacity: web 1)"
    ]


def test_a_capacity_of_two_lets_a_url_player_be_in_two_matches(tmp_path: Path) -> None:
    # The fake answers START only once two matches are open: they overlap, or it waits.
    seats = Seats(meet=2)
    with local_http(Handler, player=seats) as url:
        recorder = play(write(tmp_path, url, others=1, extra="    capacity: 2\n"))
    assert seats.overlaps == [] and seats.most == 2
    assert recorder.notes == []
    transcripts = [read_transcript(p) for p in (tmp_path / "results" / "web").glob("*-vs-*.json")]
    assert len(transcripts) == 2 and all(t.faults == [] for t in transcripts)


def matches_of(tmp_path: Path, others: int, extra: str = "") -> list[ScheduledMatch]:
    return schedule(load_config(write(tmp_path, "http://127.0.0.1:9", others, extra)))


def test_a_match_that_waits_for_its_url_player_lets_a_later_one_go_first(tmp_path: Path) -> None:
    matches = matches_of(tmp_path, others=2)
    web = [m for m in matches if "web" in m.players]
    rest = [m for m in matches if "web" not in m.players]

    async def scenario() -> None:
        dispatcher = Dispatcher([web[0], web[1], rest[0]], {"web": 1})
        first = await dispatcher.take(1)
        second = await dispatcher.take(1)
        assert (first, second) == ([web[0]], [rest[0]])
        waiting = asyncio.create_task(dispatcher.take(1))
        for _ in range(10):  # every chance to run: it has nothing to take until web is free
            await asyncio.sleep(0)
        assert not waiting.done()
        await dispatcher.done(second)
        for _ in range(10):
            await asyncio.sleep(0)
        assert not waiting.done()
        await dispatcher.done(first)
        assert await waiting == [web[1]]
        assert len(dispatcher) == 0
        assert await dispatcher.take(1) == []

    asyncio.run(scenario())


def test_a_batch_played_in_turn_holds_one_seat_of_its_url_player(tmp_path: Path) -> None:
    matches = matches_of(tmp_path, others=1)

    async def scenario() -> None:
        dispatcher = Dispatcher(matches, {"web": 1})
        batch = await dispatcher.take(5)
        assert batch == matches  # both, played one after the other
        await dispatcher.done(batch)
        again = Dispatcher(matches, {"web": 1})
        one = await again.take(1)
        waiting = asyncio.create_task(again.take(1))
        await asyncio.sleep(0)
        assert not waiting.done()
        await again.done(one)
        assert await waiting == matches[1:]

    asyncio.run(scenario())


def test_program_players_have_no_capacity_and_a_url_player_has_one(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, "http://127.0.0.1:9", others=2))
    assert capacities(config) == {"web": 1}
    config = load_config(write(tmp_path, "http://127.0.0.1:9", others=2, extra="    capacity: 3\n"))
    assert capacities(config) == {"web": 3}


def test_a_capacity_for_a_program_or_below_one_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(
        "name: bad\ngames: [ticblock]\nplayers:\n  - {name: a, command: random}\n"
        "  - name: b\n    command: random\n    capacity: 2\n"
    )
    with pytest.raises(ConfigError) as error:
        load_config(path)
    assert str(error.value) == (
        f"{path}:7: players[1].capacity: capacity is for URL players; a program is started"
        " for each match it plays"
    )
    path.write_text(
        "name: bad\ngames: [ticblock]\nplayers:\n  - {name: a, command: random}\n"
        "  - {name: b, url: 'http://127.0.0.1:9', capacity: 0}\n"
    )
    with pytest.raises(ConfigError, match=r"bad.yaml:5: players\[1\].capacity: .*greater than 0"):
        load_config(path)


def test_two_players_at_one_url_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "twice.yaml"
    path.write_text(
        "name: twice\ngames: [ticblock]\nplayers:\n  - {name: a, url: 'http://LocalHost:9147'}\n"
        "  - {name: r, command: random}\n  - {name: b, url: 'http://localhost:9147/'}\n"
    )
    with pytest.raises(ConfigError) as error:
        load_config(path)
    assert str(error.value) == (
        f"{path}:6: players[2].url: http://localhost:9147/ is player a's URL too"
    )
