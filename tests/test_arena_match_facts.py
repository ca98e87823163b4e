"""A match's facts for its pages, read in one query, a finished match's kept
(`referee.arena.match_facts`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import event, update

from referee.arena import match_facts
from referee.arena.db import Author, Match, MatchState
from referee.arena.errors import NotFound
from referee.arena.match_facts import Kept, SeatFacts
from tests.support.arena import Site, add_match, make_site, seed
from tests.support.arena_databases import ArenaMaker


@pytest.fixture
def site(make_arena: ArenaMaker) -> Iterator[Site]:
    yield from make_site(make_arena)


class Statements:
    """Counts the SQL statements the arena's database is sent."""

    def __init__(self, site: Site) -> None:
        self.sent = 0
        event.listen(site.arena.database.engine, "before_cursor_execute", self._sent)

    def _sent(self, *_: object) -> None:
        self.sent += 1


def author(site: Site, name: str) -> Author:
    with site.arena.database.session() as session:
        found = session.query(Author).filter_by(name=name).one()
        session.expunge(found)
        return found


def test_a_match_is_read_with_its_seats_in_order_in_one_statement(site: Site) -> None:
    seed(site)  # arena-000001: ace.2 (alice's) as xcplayer against bee.1 (bob's)
    statements = Statements(site)
    facts = match_facts.read(site.arena, "arena-000001")
    assert statements.sent == 1
    alice, bob = author(site, "alice"), author(site, "bob")
    assert facts.seats == (
        SeatFacts("xcplayer", "ace.2", "ace", alice.id),
        SeatFacts("obplayer", "bee.1", "bee", bob.id),
    )
    assert (facts.key, facts.state, facts.game) == ("arena-000001", MatchState.DONE, "ticblock")
    assert facts.players == {"xcplayer": "ace.2", "obplayer": "bee.1"}
    assert facts.bots == {"ace.2": "ace", "bee.1": "bee"}
    assert (
        facts.transcript_in(site.arena.directory)
        == (site.arena.results / "arena-000001.json").resolve()
    )


def test_whose_logs_a_viewer_may_read_are_their_own_bots_or_all_for_the_organiser(
    site: Site,
) -> None:
    seed(site)
    facts = match_facts.read(site.arena, "arena-000001")
    assert facts.readable(author(site, "alice")) == {"xcplayer"}
    assert facts.readable(author(site, "bob")) == {"obplayer"}
    assert facts.readable(author(site, "organiser")) == {"xcplayer", "obplayer"}
    assert facts.readable(None) == frozenset()


@pytest.mark.parametrize("key", ["arena-999", "x" * 300, "nul\x00key"])
def test_no_such_match_is_not_found(site: Site, key: str) -> None:
    with pytest.raises(NotFound, match="no match"):
        match_facts.read(site.arena, key)


def test_a_transcript_outside_the_arena_or_none_is_not_found(site: Site) -> None:
    ids = seed(site)
    add_match(site, "m-run", [(ids["ace"], None), (ids["bee"], None)], MatchState.RUNNING)
    with pytest.raises(NotFound, match="no transcript"):
        match_facts.read(site.arena, "m-run").transcript_in(site.arena.directory)
    with site.arena.database.session() as session:
        session.execute(update(Match).values(transcript="../../etc/passwd"))
    with pytest.raises(NotFound, match="not in the arena"):
        match_facts.read(site.arena, "m-run").transcript_in(site.arena.directory)


def test_a_finished_match_is_read_once_and_one_not_done_each_time(site: Site) -> None:
    ids = seed(site)
    add_match(site, "m-run", [(ids["ace"], None), (ids["bee"], None)], MatchState.RUNNING)
    kept = Kept(site.arena)
    statements = Statements(site)
    for _ in range(5):
        assert kept.of("arena-000001").state == MatchState.DONE
        assert kept.of("m-run").state == MatchState.RUNNING
    assert statements.sent == 1 + 5
    with site.arena.database.session() as session:
        session.execute(update(Match).where(Match.key == "m-run").values(state=MatchState.DONE))
    assert kept.of("m-run").state == MatchState.DONE, "its end is seen at once"
    before = statements.sent
    kept.of("m-run")
    assert statements.sent == before, "then kept"


def test_the_finished_matches_kept_are_the_most_recently_asked(site: Site) -> None:
    ids = seed(site)
    for key in ("m-1", "m-2"):
        add_match(site, key, [(ids["ace"], 1.0), (ids["bee"], 0.0)])
    kept = Kept(site.arena, most=2)
    statements = Statements(site)
    for key in ("arena-000001", "m-1", "arena-000001", "m-2"):  # m-1 goes
        kept.of(key)
    assert statements.sent == 3
    kept.of("arena-000001")
    kept.of("m-2")
    assert statements.sent == 3
    kept.of("m-1")
    assert statements.sent == 4


def test_a_kept_match_whose_transcript_file_is_gone_is_refused_in_one_line(site: Site) -> None:
    seed(site)
    assert site.get("/api/matches/arena-000001/transcript", "alice").status_code == 200
    (site.arena.results / "arena-000001.json").unlink()
    answer = site.get("/api/matches/arena-000001/transcript", "alice")
    assert answer.status_code == 404 and "cannot be read" in answer.json()["error"]
