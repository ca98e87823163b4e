"""The arena in tests: the configs tests share, the tokens its commands print, waiting for
what a served arena does, a version put straight on the ladder, and a site of the JSON API
(an arena, a test client, a stand-in for the intake and the ladder) with its data seeded and
its match rows added."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import re
import shutil
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session
from starlette.testclient import TestClient

from referee.arena.ladder import tallies
from referee.arena.store.db import (
    Author,
    Bot,
    Match,
    MatchState,
    Seat,
    Step,
    StepKind,
    StepState,
    Version,
    VersionState,
)
from referee.arena.store.home import Arena, add_author
from referee.arena.web.api import Hooks, create_app
from referee.clock import Clocks
from referee.games import get_game
from referee.match import Match as PlayedMatch
from referee.match import MatchSetup
from referee.records.transcript import write_transcript
from referee.tournaments.ratings import points
from referee.tournaments.results import LOGS
from tests.support.arena_databases import ArenaMaker
from tests.support.arena_serving import DEADLINE_S
from tests.support.fakes import first_legal, scripted
from tests.support.referees import MISBEHAVING

# An arena served as its users meet it (tests/arena/service/test_service.py,
# arena/web/test_pages.py).
SERVICE_CONFIG = """\
name: service
games: [ticblock]
start_clock: 5000
play_clock: 1000
arena:
  placement_matches: 2
  submission: {per_hour: 100}
  build: {seconds: 120, memory_mb: 1024}
"""
# An arena of the JSON API's tests (tests/arena/web/test_api.py, arena/web/test_web.py): format it
# with `public`, whether the leaderboard is public.
API_CONFIG = """\
name: api-test
games: [ticblock]
arena:
  submission: {{max_mb: 1, max_files: 10, per_hour: 3}}
  public_leaderboard: {public}
"""
# A ladder of forfeit matches, two at once, that places a version after 2 matches
# (tests/arena/ladder/test_ladder.py, arena/service/test_restart.py): format it with the
# `game` and the `arena` settings besides.
# An arena whose intake validates with one match a role, and builds within a minute.
# Clocks no load makes a random player's instant answers miss: a version the intake takes in
# is placed on a machine as busy as a loaded CI's.
INTAKE_CONFIG = """\
name: intake
games: [ticblock]
start_clock: 5000
play_clock: 5000
policy: forfeit
arena:
  validate: {matches_per_role: 1}
  build: {seconds: 60, memory_mb: 512}
"""
LADDER_CONFIG = """\
name: ladder-test
games: [{game}]
start_clock: 5000
play_clock: 1000
policy: forfeit
openings: 2
concurrency: 2
arena:
  placement_matches: 2
{arena}"""
# The arguments of the tests' zoo player (MISBEHAVING), which plays random moves and needs
# nothing of the referee's package (hidden in a jail), for a misdeed that never comes: a
# player that plays on.
NEVER = "exit --at 1000000000"
# The line of `referee arena init` and `arena author add` that shows a new token.
TOKEN_LINE = re.compile(r"token \(shown once, kept only as its hash\): (\S+)$")


def token_of(output: str) -> str:
    """The token a command printed on its last line."""
    found = TOKEN_LINE.search(output.strip().splitlines()[-1])
    assert found is not None, output
    return found.group(1)


def wait_for(what: str, done: Callable[[], bool], within_s: float = DEADLINE_S) -> None:
    """Until `done()`, for at most `within_s`: what a served arena does takes its time (a
    test that waits on many matches gives more)."""
    deadline = time.monotonic() + within_s
    while not done():
        assert time.monotonic() < deadline, f"still waiting for {what}"
        time.sleep(0.2)


def add_version(
    arena: Arena,
    bot_name: str,
    program: str = "random",
    script: str = MISBEHAVING.name,
    author: str | None = None,
    mode: str = NEVER,
) -> int:
    """A version of a new bot of `author` (by default the first), straight to `placing`: a
    player that plays random moves (the tests' random player copied as `script`, run in
    `mode`), or a program that exits at once. Test data, written as rows: the arena itself
    moves a version only through lifecycle.py."""
    with arena.database.session() as session:
        whose = select(Author) if author is None else select(Author).filter_by(name=author)
        bot = Bot(author=session.scalar(whose), name=bot_name)
        version = Version(
            bot=bot,
            number=1,
            state=VersionState.PLACING,
            run=f"{sys.executable} {f'{script} {mode}' if program == 'random' else 'crash.py'}",
            archive_sha256="0" * 64,
        )
        session.add(version)
        session.flush()
        version_id = version.id
    directory = arena.bot_directory(version_id)
    directory.mkdir(parents=True)
    if program == "random":
        shutil.copy(MISBEHAVING, directory / script)
    else:
        (directory / "crash.py").write_text("import sys\nsys.exit(3)\n")
    return version_id


@dataclass
class StandIn:
    """The intake and the ladder, as the API sees them: what it told them."""

    submitted: list[int] = field(default_factory=list)
    paused: list[bool] = field(default_factory=list)
    changed: int = 0
    # For each status asked: whether the cluster's address was asked for.
    addresses: list[bool] = field(default_factory=list)
    # Each final asked for: its format and rounds.
    finals: list[tuple[str, int]] = field(default_factory=list)

    def hooks(self) -> Hooks:
        return Hooks(
            submitted=self.submitted.append,
            field_changed=self._changed,
            ladder_status=self._status,
            set_paused=self.paused.append,
            play_final=self._final,
            final_status=lambda: {"state": "none"},
        )

    def _final(self, fmt: str, rounds: int) -> Mapping[str, Any]:
        self.finals.append((fmt, rounds))
        return {"state": "playing", "format": fmt, "rounds": rounds}

    def _changed(self) -> None:
        self.changed += 1

    def _status(self, address: bool) -> Mapping[str, Any]:
        self.addresses.append(address)
        return {"paused": bool(self.paused and self.paused[-1]), "queued": 0}


@dataclass
class Site:
    arena: Arena
    client: TestClient
    ladder: StandIn
    tokens: dict[str, str]

    def get(self, path: str, who: str | None = None, **kwargs: Any) -> Any:
        return self.client.get(path, headers=self.auth(who), **kwargs)

    def post(self, path: str, who: str | None = None, **kwargs: Any) -> Any:
        return self.client.post(path, headers=self.auth(who), **kwargs)

    def auth(self, who: str | None) -> dict[str, str]:
        return {} if who is None else {"Authorization": f"Bearer {self.tokens[who]}"}


def signed_in(client: TestClient, token: str, origin: str = "http://testserver") -> str:
    """Sign in with `token` through the form, as a browser does: the Set-Cookie line's
    `name=value`, ready for a Cookie header. The client keeps no cookie of its own after it,
    so that a test sends the cookie where it means to."""
    answer = client.post(
        "/signin", data={"token": token}, headers={"Origin": origin}, follow_redirects=False
    )
    assert answer.status_code == 303, answer.text
    client.cookies.clear()
    return str(answer.headers["set-cookie"]).split(";")[0]


def make_site(
    make_arena: ArenaMaker, public: bool = True, arena_keys: str = "", games: str = "ticblock"
) -> Iterator[Site]:
    """A site of API_CONFIG playing `games` (a YAML list's items), with `arena_keys` (lines
    of the arena section) added."""
    config = API_CONFIG.format(public=str(public).lower()).replace("[ticblock]", f"[{games}]")
    config += arena_keys
    arena = make_arena(config_text=config)
    tokens = {"organiser": make_arena.organiser_token(arena)}
    for name in ("alice", "bob"):
        tokens[name] = add_author(arena, name)
    ladder = StandIn()
    with TestClient(create_app(arena, ladder.hooks())) as client:
        yield Site(arena, client, ladder, tokens)


def seed(site: Site) -> dict[str, Any]:
    """alice's bot `ace` (version 1 failed, version 2 rated), bob's `bee` (rated, better),
    bob's `cub` (placing, no rating), and one match of ace against bee with logs."""
    arena = site.arena
    now = dt.datetime.now(dt.UTC)
    with arena.database.session() as session:
        alice = session.query(Author).filter_by(name="alice").one()
        bob = session.query(Author).filter_by(name="bob").one()
        ace = Bot(author_id=alice.id, name="ace")
        bee = Bot(author_id=bob.id, name="bee")
        cub = Bot(author_id=bob.id, name="cub")
        failed = Version(
            bot=ace,
            number=1,
            state=VersionState.FAILED,
            reason="SECRET-REASON",
            advice="SECRET-ADVICE\nflush after each line",
            archive_sha256="0" * 64,
            run="python3 SECRET-RUN.py",
        )
        failed.steps.append(
            Step(
                kind=StepKind.BUILD,
                state=StepState.FAILED,
                verdict="SECRET-VERDICT",
                log="SECRET-BUILD-LOG",
                finished_at=now,
            )
        )
        ace2 = Version(
            bot=ace,
            number=2,
            state=VersionState.RATED,
            archive_sha256="1" * 64,
            rating=10.0,
            margin=30.0,
            matches=4,
            faults=1,
        )
        bee1 = Version(
            bot=bee,
            number=1,
            state=VersionState.RATED,
            archive_sha256="2" * 64,
            rating=50.0,
            margin=20.0,
            matches=4,
        )
        cub1 = Version(bot=cub, number=1, state=VersionState.PLACING, archive_sha256="3" * 64)
        session.add_all([ace, bee, cub, failed, ace2, bee1, cub1])
        session.flush()
        match = Match(
            key="arena-000001",
            game="ticblock",
            seed=7,
            state=MatchState.DONE,
            finished_at=now,
            transcript="results/arena-000001.json",
            summary="bee.1 won",
        )
        match.seats = [
            Seat(index=0, role="xcplayer", version_id=ace2.id, points=0.0),
            Seat(index=1, role="obplayer", version_id=bee1.id, points=100.0),
        ]
        session.add(match)
        session.flush()
        tallies.tally(match)
        _met(session, match)
        ids = {"failed": failed.id, "ace": ace2.id, "bee": bee1.id}
    (arena.results / "arena-000001.json").write_text(json.dumps({"match_id": "arena-000001"}))
    logs = arena.results / LOGS
    logs.mkdir(exist_ok=True)
    (logs / "arena-000001.xcplayer.log").write_text("ace says SECRET-LOG\n")
    (logs / "arena-000001.obplayer.log").write_text("bee says hello\n")
    return ids


def add_match(
    site: Site, key: str, seats: list[tuple[int, float | None]], state: str = MatchState.DONE
) -> None:
    """A match row of ticblock, and no transcript: `seats` are (version, points) of
    xcplayer, then obplayer (points None: no result). Done, it finished now: the arena gives
    a match its moment when it is done, and only then; and its bots' meeting is counted, as
    recording counts it (not its versions' results)."""
    finished = dt.datetime.now(dt.UTC) if state == MatchState.DONE else None
    with site.arena.database.session() as session:
        match = Match(key=key, game="ticblock", seed=1, state=state, finished_at=finished)
        match.seats = [
            Seat(index=index, role=role, version_id=version, points=points)
            for index, (role, (version, points)) in enumerate(
                zip(("xcplayer", "obplayer"), seats, strict=True)
            )
        ]
        session.add(match)
        if state == MatchState.DONE:
            session.flush()
            _met(session, match)


def _met(session: Session, match: Match) -> None:
    """Done `match`'s meeting of its bots counted, as recording counts it."""
    meetings = tallies.Meetings()
    meetings.add(match)
    meetings.save(session)


def played_match(site: Site, key: str, versions: tuple[int, int] | None = None) -> Path:
    """`signed_match` in the site's arena."""
    return signed_match(site.arena, key, versions)


def signed_match(arena: Arena, key: str, versions: tuple[int, int] | None = None) -> Path:
    """A real match of ticblock, its transcript signed with the arena's key, and its row;
    played by two of the arena's versions, if given (named as players, seated, finished),
    else by two players of no bot's."""
    names: tuple[str, ...] = ("one", "two")
    if versions is not None:
        with arena.database.session() as session:
            names = tuple(session.get_one(Version, v).player_name for v in versions)
    (one, _), (two, _) = (scripted(name, first_legal()) for name in names)
    setup = MatchSetup(key, get_game("ticblock"), [one, two], Clocks(5000, 2000), seed=3)
    path = arena.results / f"{key}.json"
    played = asyncio.run(PlayedMatch(setup).run())
    write_transcript(path, played, arena.key)
    with arena.database.session() as session:
        match = Match(
            key=key,
            game="ticblock",
            seed=3,
            state=MatchState.DONE,
            transcript=str(path.relative_to(arena.directory)),
        )
        if versions is not None:
            match.finished_at = dt.datetime.now(dt.UTC)
            # Each seat's points as the arena records them: 1, ½ or 0 against the other's goal.
            goals = played.goals or {}
            roles = [seat.role for seat in played.seats]
            match.seats = [
                Seat(
                    index=i,
                    role=role,
                    version_id=version,
                    points=points(goals[role], goals[roles[1 - i]]) if goals else None,
                )
                for i, (role, version) in enumerate(zip(roles, versions, strict=True))
            ]
        session.add(match)
        if versions is not None:
            session.flush()
            tallies.tally(match)
            _met(session, match)
    return path
