"""Match pages replayed off the arena's process: in worker processes, kept as files that are
read back without a replay (and never trusted when torn, altered or made for other code or
another transcript), a turn at a time for each requester, so that one who asks again and
again is refused while the others are served."""

from __future__ import annotations

import json
import os
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

import pytest
from starlette.testclient import TestClient

from referee.arena.accounts import auth
from referee.arena.replays import cache as replay_cache
from referee.arena.replays import pool as replays
from referee.arena.replays import work as replay_work
from referee.arena.replays.pool import Replays, TurnTaken, requester
from referee.arena.replays.work import Replayed
from referee.arena.store.home import Arena
from referee.arena.web.api import create_app
from referee.records.signing import results_key
from referee.records.transcript import read_transcript, write_transcript
from referee.sandbox.proc import group_stats
from tests.support.arena import (
    API_CONFIG,
    Site,
    StandIn,
    make_site,
    played_match,
    signed_in,
    signed_match,
    wait_for,
)
from tests.support.arena_databases import ArenaMaker
from tests.support.arena_serving import DEADLINE_S, Served, serving
from tests.support.replay_workers import SPIN_S, hold, let_go, observed, replays_of

KEY = "arena-000002"
OTHER = "arena-000003"
# Requesters as `replays.requester` names them: an author, and a reader with no token.
ALICE, STRANGER = "author 2", "address 192.0.2.7"
T = TypeVar("T")


@pytest.fixture
def site(make_arena: ArenaMaker, monkeypatch: pytest.MonkeyPatch) -> Iterator[Site]:
    monkeypatch.setattr(replay_work, "replayed", observed)
    yield from make_site(make_arena)


@pytest.fixture
def pool(site: Site) -> Iterator[Replays]:
    """The site's arena's replays, apart from its app's, ended after the test."""
    made = Replays(site.arena)
    yield made
    made.close()


def cookie(site: Site, who: str) -> dict[str, str]:
    return {"Cookie": signed_in(site.client, site.tokens[who])}


def kept_files(site: Site) -> list[Path]:
    directory = site.arena.directory / replays.DIRECTORY
    return sorted(directory.glob("*.json")) if directory.exists() else []


def in_thread(call: Callable[..., T], *args: Any, **kwargs: Any) -> Future[T]:
    """`call(*args, **kwargs)` begun in a thread of its own; its answer, once it has one."""
    answer: Future[T] = Future()

    def run() -> None:
        try:
            answer.set_result(call(*args, **kwargs))
        except BaseException as error:
            answer.set_exception(error)

    threading.Thread(target=run, daemon=True).start()
    return answer


def test_a_match_page_is_replayed_in_a_worker_once_then_read_from_its_file(site: Site) -> None:
    path = played_match(site, KEY)
    page = site.client.get(f"/matches/{KEY}", headers=cookie(site, "alice"))
    assert page.status_code == 200 and 'id="frames"' in page.text
    [worker] = replays_of(path)
    assert worker != os.getpid()
    [kept] = kept_files(site)
    record = json.loads(kept.read_text())["replayed"]
    assert record["made_by"] == worker and record["kind"] == "page"
    # A new app (as after a restart: nothing in memory) reads the file, without a replay.
    with TestClient(create_app(site.arena, StandIn().hooks())) as again:
        answer = again.get(
            f"/matches/{KEY}", headers={"Cookie": signed_in(again, site.tokens["bob"])}
        )
    assert answer.status_code == 200 and 'id="frames"' in answer.text
    assert replays_of(path) == [worker]
    # The viewer shown is the one made by the worker, links and all.
    assert record["html"] in answer.text


def test_a_kept_replay_torn_altered_stale_or_of_another_transcript_is_not_trusted(
    site: Site, pool: Replays, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = played_match(site, KEY)
    first = pool.page(ALICE, KEY, {})
    assert first.verified and first.html
    [kept] = kept_files(site)
    assert pool.page(STRANGER, KEY, {}) == first and len(replays_of(path)) == 1
    whole = kept.read_bytes()
    # Torn: half a file.
    kept.write_bytes(whole[: len(whole) // 2])
    assert pool.page(ALICE, KEY, {}) == replace(first, made_by=replays_of(path)[-1])
    assert len(replays_of(path)) == 2 and kept.read_bytes() != whole[: len(whole) // 2]
    # Altered: a record that is not the one its file's sha256 is of.
    data = json.loads(kept.read_text())
    data["replayed"]["html"] = "<script>alert(1)</script>"
    kept.write_text(json.dumps(data))
    assert "<script>" not in pool.page(ALICE, KEY, {}).html
    assert len(replays_of(path)) == 3
    # A file for another entry, moved to this one's name.
    data = json.loads(kept.read_text())
    data["entry"] = "0" * 64
    kept.write_text(json.dumps(data))
    assert pool.page(ALICE, KEY, {}).verified and len(replays_of(path)) == 4
    # Made by other code: the arena upgraded reads none of what the one before kept.
    monkeypatch.setattr(replay_cache, "code_version", lambda: "another arena's code")
    upgraded = Replays(site.arena)
    try:
        assert upgraded.page(ALICE, KEY, {}).verified and len(replays_of(path)) == 5
        assert len(kept_files(site)) == 2
    finally:
        upgraded.close()
    # The transcript rewritten (signed with another key): what was kept of it is not shown.
    other = results_key(tmp_path / "elsewhere", None)[0]
    write_transcript(path, read_transcript(path), other)
    rewritten = pool.page(ALICE, KEY, {})
    assert not rewritten.verified and rewritten.problem and not rewritten.html
    assert len(replays_of(path)) == 6


def test_a_replay_computes_in_another_process_not_the_arenas(site: Site, pool: Replays) -> None:
    """The arena's process waits on a replay, its interpreter free for the ladder's referee:
    the core the replay takes is its worker's."""
    path = played_match(site, KEY)
    hold(path)
    before = time.process_time()
    answer = in_thread(pool.page, ALICE, KEY, {})
    wait_for("the replay to take its core", Path(f"{path}.spun").exists)
    spent = time.process_time() - before
    let_go(path)
    shown = answer.result(timeout=120)
    assert isinstance(shown, Replayed) and shown.verified
    [worker] = replays_of(path)
    assert shown.made_by == worker != os.getpid()
    # The worker took SPIN_S of CPU; the arena's process, waiting, far less.
    assert spent < SPIN_S / 2, spent


def test_one_requester_past_their_turn_gets_503_while_another_is_served(site: Site) -> None:
    held, other = played_match(site, KEY), played_match(site, OTHER)
    hold(held)
    alice = cookie(site, "alice")
    first = in_thread(site.client.get, f"/matches/{KEY}", headers=alice)
    wait_for("alice's replay to start", lambda: bool(replays_of(held)))
    # alice's turn is taken: another match's page, or its export, is refused at once.
    refused = site.client.get(f"/matches/{OTHER}", headers=alice)
    assert refused.status_code == 503 and "Busy: your replay under way" in refused.text
    assert refused.headers["Retry-After"] == str(replays.RETRY_AFTER_S)
    export = site.get(f"/api/matches/{OTHER}/ggp", "alice")
    assert export.status_code == 503 and "your replay under way" in export.json()["error"]
    assert export.headers["Retry-After"] == str(replays.RETRY_AFTER_S)
    assert replays_of(other) == []
    # bob is served meanwhile, page and export.
    served = site.client.get(f"/matches/{OTHER}", headers=cookie(site, "bob"))
    assert served.status_code == 200 and 'id="frames"' in served.text
    ggp = site.get(f"/api/matches/{OTHER}/ggp", "bob")
    assert ggp.status_code == 200 and ggp.json()["matchId"] == OTHER
    # Who asks for the page being replayed waits for that replay, turn or not: alice too.
    waiting = in_thread(site.client.get, f"/matches/{KEY}", headers=alice)
    let_go(held)
    for answer in (first, waiting):
        page = answer.result(timeout=120)
        assert page.status_code == 200 and 'id="frames"' in page.text
    assert len(replays_of(held)) == 1
    # Her turn over, alice is served again.
    assert site.client.get(f"/matches/{OTHER}", headers=alice).status_code == 200


def test_all_the_turns_together_are_bounded(site: Site, pool: Replays) -> None:
    keys = [f"arena-{n:06}" for n in range(10, 10 + replays.ADMITTED)]
    paths = [played_match(site, key) for key in keys]
    for path in paths:
        hold(path)
    answers = [in_thread(pool.page, f"author {n}", key, {}) for n, key in enumerate(keys)]
    last = played_match(site, "arena-000099")
    wait_for("every replay asked for", lambda: pool.asked == replays.ADMITTED)
    # ADMITTED are under way or waiting: one more, of someone with no turn yet, is refused.
    with pytest.raises(TurnTaken, match=f"{replays.ADMITTED} replays under way or waiting"):
        pool.page("author 99", "arena-000099", {})
    assert replays_of(last) == []
    for path in paths:
        let_go(path)
    assert all(answer.result(timeout=240).verified for answer in answers)
    assert pool.asked == 0
    assert pool.page("author 99", "arena-000099", {}).verified


def test_closing_ends_the_workers_and_the_replays_under_way(site: Site, pool: Replays) -> None:
    path = played_match(site, KEY)
    hold(path)
    answer = in_thread(pool.page, ALICE, KEY, {})
    wait_for("the replay to start", lambda: bool(replays_of(path)))
    [worker] = replays_of(path)
    pool.close()
    with pytest.raises(TurnTaken, match="cut short"):
        answer.result(timeout=120)
    with pytest.raises(ProcessLookupError):
        os.kill(worker, 0)
    assert kept_files(site) == []
    # Asked again, the replay starts new workers.
    let_go(path)
    shown = pool.page(ALICE, KEY, {})
    assert shown.verified and shown.made_by != worker


def test_the_organisers_replay_is_done_again_each_time(site: Site) -> None:
    path = played_match(site, KEY)
    for _ in range(2):
        answer = site.post(f"/api/matches/{KEY}/replay", "organiser")
        assert answer.json() == {"key": KEY, "verified": True, "problem": None}
    assert len(replays_of(path)) == 2 and kept_files(site) == []


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def replayed_page(served: Served, arena: Arena, token: str) -> int:
    """The served arena's page of match KEY, made by one of its workers: its pid."""
    asked = urllib.request.Request(
        f"{served.url}/matches/{KEY}", headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(asked, timeout=DEADLINE_S) as answer:
        assert answer.status == 200 and 'id="frames"' in answer.read().decode()
    [kept] = sorted((arena.directory / replays.DIRECTORY).glob("*.json"))
    worker: int = json.loads(kept.read_text())["replayed"]["made_by"]
    assert worker not in (served.process.pid, os.getpid()) and alive(worker)
    return worker


def test_a_served_arena_replays_in_its_workers_which_end_with_it(make_arena: ArenaMaker) -> None:
    """`referee arena serve` as a person runs it: the page is made by a worker, not the
    arena's process, and the workers end when the arena stops."""
    arena = make_arena(config_text=API_CONFIG.format(public="true"))
    token = make_arena.organiser_token(arena)
    signed_match(arena, KEY)
    with serving(arena.directory) as served:
        worker = replayed_page(served, arena, token)
        said = served.stop()
        assert "leaked" not in said, said
    wait_for("the replay worker to end with the arena", lambda: not alive(worker))


def test_a_served_arena_killed_leaves_no_process_of_its_replays(make_arena: ArenaMaker) -> None:
    """Killed, the arena closes no pool: its replay workers end with it all the same, and
    the fork server and resource tracker that they kept running with them."""
    arena = make_arena(config_text=API_CONFIG.format(public="true"))
    token = make_arena.organiser_token(arena)
    signed_match(arena, KEY)
    with serving(arena.directory) as served:
        worker = replayed_page(served, arena, token)
        # Its process group (a session of its own): the arena, its workers and helpers.
        group = served.process.pid
        assert worker in running_in(group)
        served.process.kill()
        served.process.wait(DEADLINE_S)
        wait_for("the arena's processes to end with it", lambda: not running_in(group))


def running_in(group: int) -> list[int]:
    """The processes of a process group that have not ended."""
    return [pid for pid, fields in group_stats(group) if fields[0] != b"Z"]


def test_a_requester_is_the_signed_in_author_wherever_they_are_else_the_address(
    site: Site,
) -> None:
    alice = auth.author_of(site.arena, site.tokens["alice"])
    assert alice is not None
    assert requester(alice, "192.0.2.1") == requester(alice, "192.0.2.2")
    assert requester(None, "192.0.2.1") != requester(None, "192.0.2.2")
    assert requester(None, "192.0.2.1") != requester(alice, "192.0.2.1")


def test_the_kept_pages_stay_within_their_bound_the_newest_kept(tmp_path: Path) -> None:
    def page(number: int) -> Replayed:
        html = f"<p>{number}</p>" + "x" * 1000
        return Replayed(replay_work.Kind.PAGE, f"{number:064x}", os.getpid(), None, html=html)

    directory = tmp_path / "replays"
    one = len(json.dumps({"replayed": page(0).to_json()})) + 200
    cache = replay_cache.ReplayCache(directory, limit_bytes=5 * one)
    for number in range(12):
        cache.put(f"page-{number}", page(number))
        kept = [path.stat().st_size for path in directory.iterdir()]
        assert sum(kept) <= 5 * one, number
    # Counted once, then by what is written: the oldest went, the four newest are there.
    names = {path.name for path in directory.iterdir()}
    assert {cache.path(f"page-{number}").name for number in range(8, 12)} <= names
    assert cache.path("page-0").name not in names
