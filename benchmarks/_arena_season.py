"""A season of an arena, seeded into its database: authors, their bots and versions, the
ladder's finished matches with their seats, each version's counts and results, each bot's
meetings with each other bot, the rating history, the intake's steps and the audit log, as
the arena itself writes them (its own SQLAlchemy tables, in bulk), so that its pages read
them as real.

The season lasts SEASON_DAYS and ends a few minutes before the seeding. Each author has one
bot; half the bots start on the first day, the others at random in the season's first 60%;
a bot's versions are submitted at random through its time, each one replacing the one
before (`retired`, "replaced by version N"), as the intake's placement does. A few bots are
suspended by the organiser part-way and play no more. Pairs of matches (the seats swapped,
one seed, as `pairing.Pair`) are spread over the season between two bots on the ladder at
that moment, chosen at random; each result is drawn from the two versions' strengths (Elo's
curve, with draws), a few with a fault. A version's first `placement_matches` are its
placement; one with fewer at the end is still `placing`.

Rating history: the ladder writes a point when a fit moved a version's rating by 0.5 or
more (`rating_fits.POINT_MOVE`); a version's rating moves by about its margin over its
matches so far, so nearly every one of its early matches adds a point and fewer later: a
point after its n-th match with the chance min(1, HISTORY_FULL / n).

Transcripts: a few matches spread over the season (`samples`) are played for real, between
two copies of the sample random player named as their seats' versions, with the match's
key and seed, and written signed with the arena's key where the arena keeps them: their
pages replay and verify as any match's. The other rows name transcripts not on disk, as an
arena whose old transcripts were archived elsewhere; the pages that list matches read rows
only. A share of the bots (`chatty`) write a line to their log in every match, as bots that
print their thinking to standard error do: those logs are on disk (`results/logs/`).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import io
import math
import shutil
import sys
import tarfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sqlalchemy import insert, text, update

from referee.arena.ladder.queue import match_key
from referee.arena.ladder.recording import summary
from referee.arena.ladder.tallies import MEETING_COUNTS
from referee.arena.store.db import (
    AuditEntry,
    Author,
    Bot,
    Match,
    MatchState,
    Meeting,
    RatingPoint,
    Seat,
    Step,
    StepKind,
    StepState,
    Version,
    VersionState,
    name_key,
    player_name,
)
from referee.arena.store.home import Arena
from referee.arena.store.tokens import new_token, token_hash
from referee.match import MatchSetup, play_fresh
from referee.players.builtin import player_spec
from referee.players.process import ProgramPlayer
from referee.players.starter import STARTERS
from referee.policy import Policy
from referee.tournaments.ratings import points
from referee.tournaments.results import LOGS

SEASON_DAYS = 90
# Rows written per statement and per transaction.
CHUNK = 20_000
# A point of rating history after a version's n-th match with the chance min(1, this / n).
HISTORY_FULL = 300.0
# The share of matches in which a seat faulted (a timeout: it lost).
FAULT_SHARE = 0.002
# The share of bots the organiser suspended part-way through the season.
SUSPENDED_SHARE = 0.05
# Matches played for real, with their transcripts on disk.
SAMPLES = 40
# The authors whose tokens the seeding gives back.
AUTHORS_KEPT = 8
# What a chatty bot writes to its log in each match.
CHATTY_LINE = "thinking: 12 moves, chose the one with the best playout score\n" * 4
# The sample bot of docs/protocol.md: the standard library only, as a bot in the jail needs.
RANDOM_PLAYER = STARTERS / "random_player.py"
RUN = "/usr/bin/python3 random_player.py"
ADDRESS = "127.0.0.1"
# What validation's report says of a bot that passed, as a step's log keeps it.
_CHECKS = ("ready", "legal moves", "answers in time", "start in time", "end", "quiet stdout")
VALIDATE_LOG = (
    "PASS: the bot played every match to its end, legally, within its clocks.\n"
    + "".join(f"  {check:<24} passed\n" for check in _CHECKS)
    + "limits: memory 512 MiB, 64 processes, files 64 MiB; protections: all\n"
)


@dataclass(frozen=True)
class SeasonSize:
    authors: int
    versions: int
    matches: int


@dataclass
class Season:
    """What the seeding made, and what the measures need of it."""

    organiser_token: str
    # The authors with the most versions, and their tokens (for "My bots"): one a client.
    authors: list[tuple[str, str]]
    bots: list[str]
    # Bots suspended part-way: their matches are old.
    dormant: list[str]
    # Matches with a transcript on disk, played for real.
    samples: list[str]
    rows: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0


@dataclass
class _Plan:
    """The season drawn, before any row is written."""

    start: dt.datetime
    span_s: float
    bot_start: np.ndarray
    bot_stop: np.ndarray
    # [bot, k]: when version k of the bot reached the ladder (inf past its last).
    active: np.ndarray
    submitted: np.ndarray
    counts: np.ndarray
    # [bot, k]: the version's id, and its strength in Elo; the strengths' mean, where the
    # ladder's fits centre the ratings.
    ids: np.ndarray
    strength: np.ndarray
    centre: float
    chatty: np.ndarray


def seed(
    arena: Arena,
    organiser_token: str,
    size: SeasonSize,
    chatty: float,
    progress: Callable[[str], None],
    rng_seed: int = 70,
) -> Season:
    """Seed `arena` (just made: its organiser only) with a season of `size`."""
    begun = time.monotonic()
    rng = np.random.default_rng(rng_seed)
    plan = _draw(size, chatty, rng)
    tokens = _authors_and_bots(arena, plan, progress)
    versions = _versions(arena, plan)
    progress(f"seeded {size.authors} authors, {len(versions)} versions and their steps")
    tallies, rows, samples = _matches(arena, plan, versions, size.matches, rng, progress)
    _finish_versions(arena, plan, versions, tallies)
    _meetings(arena, tallies)
    _audit(arena, plan, versions)
    _bot_files(arena, versions)
    rows.update(
        authors=size.authors,
        bots=len(plan.bot_start),
        versions=len(versions),
        steps=3 * len(versions),
    )
    if not arena.database.url.startswith("sqlite"):
        # The rows given their ids: PostgreSQL's sequences moved past them, as the arena's
        # own inserts would have moved them (SQLite takes the largest id and one).
        with arena.database.session(write=True) as session:
            for table in ("matches", "versions"):
                session.execute(
                    text(
                        f"SELECT setval(pg_get_serial_sequence('{table}', 'id'),"
                        f" (SELECT max(id) FROM {table}))"
                    )
                )
        # What autovacuum does soon after rows arrive in bulk: the planner's statistics. An
        # SQLite arena never gathers any (nothing runs ANALYZE), so none are made there.
        with arena.database.engine.connect() as connection:
            connection.execution_options(isolation_level="AUTOCOMMIT").execute(
                text("VACUUM ANALYZE")
            )
    bots = [f"bot{b:04d}" for b in range(len(plan.bot_start))]
    most = np.argsort(-plan.counts, kind="stable")[:AUTHORS_KEPT]
    season = Season(
        organiser_token=organiser_token,
        authors=[(f"author{b:04d}", tokens[b]) for b in most],
        bots=bots,
        dormant=[bots[b] for b in np.flatnonzero(np.isfinite(plan.bot_stop))],
        samples=samples,
        rows=rows,
    )
    season.seconds = time.monotonic() - begun
    return season


def _draw(size: SeasonSize, chatty: float, rng: np.random.Generator) -> _Plan:
    bots = size.authors
    if size.versions < bots:
        raise ValueError(f"{size.versions} versions: at least one a bot ({bots})")
    span = SEASON_DAYS * 86400.0 - 300.0
    start = dt.datetime.now(dt.UTC).replace(microsecond=0) - dt.timedelta(days=SEASON_DAYS)
    early = rng.random(bots) < 0.5
    bot_start = np.where(early, rng.uniform(0, 3600, bots), rng.uniform(0, 0.6 * span, bots))
    stopped = rng.random(bots) < SUSPENDED_SHARE
    stop_at = bot_start + rng.uniform(0.1, 1.0, bots) * (span - bot_start)
    bot_stop = np.where(stopped, stop_at, np.inf)
    counts = 1 + rng.multinomial(size.versions - bots, np.full(bots, 1 / bots))
    most = int(counts.max())
    submitted = np.full((bots, most), np.inf)
    for b in range(bots):
        last = min(bot_stop[b], span)
        later = np.sort(rng.uniform(bot_start[b], last, counts[b] - 1))
        submitted[b, : counts[b]] = np.concatenate(([bot_start[b]], later))
    # The intake takes a minute from submission to the ladder.
    active = submitted + 60.0
    # Version ids in the order the versions were submitted, over every bot.
    order = np.argsort(submitted, axis=None, kind="stable")
    ids = np.zeros(submitted.size, dtype=np.int64)
    ids[order] = np.arange(1, submitted.size + 1)
    ids = ids.reshape(submitted.shape)
    ids[~np.isfinite(submitted)] = 0
    base = rng.normal(0, 200, bots)
    steps = np.cumsum(rng.normal(25, 40, (bots, most)), axis=1)
    strength = base[:, None] + steps
    return _Plan(
        start=start,
        span_s=span,
        bot_start=bot_start,
        bot_stop=bot_stop,
        active=active,
        submitted=submitted,
        counts=counts,
        ids=ids,
        strength=strength,
        centre=float(strength[np.isfinite(submitted)].mean()),
        chatty=rng.random(bots) < chatty,
    )


def _at(plan: _Plan, seconds: float) -> dt.datetime:
    return plan.start + dt.timedelta(seconds=float(seconds))


def _authors_and_bots(arena: Arena, plan: _Plan, progress: Callable[[str], None]) -> list[str]:
    """Each author (in the order their bots came) with a token, and their bot: the tokens."""
    bots = len(plan.bot_start)
    tokens = [new_token() for _ in range(bots)]
    order = np.argsort(plan.bot_start, kind="stable")
    with arena.database.session(write=True) as session:
        authors = [
            {
                "name": f"author{b:04d}",
                "name_key": name_key(f"author{b:04d}"),
                "token_hash": token_hash(tokens[b]),
                "organiser": False,
                "created_at": _at(plan, plan.bot_start[b] - 600),
            }
            for b in order
        ]
        session.execute(insert(Author), authors)
        found = dict(session.execute(text("SELECT name, id FROM authors")).all())
        session.execute(
            insert(Bot),
            [
                {
                    "author_id": found[f"author{b:04d}"],
                    "name": f"bot{b:04d}",
                    "name_key": f"bot{b:04d}",
                    "created_at": _at(plan, plan.bot_start[b]),
                }
                for b in order
            ],
        )
    progress(f"seeded {bots} authors and bots")
    return tokens


@dataclass(frozen=True)
class _Version:
    id: int
    bot: int
    number: int
    bot_id: int


def _versions(arena: Arena, plan: _Plan) -> dict[int, _Version]:
    """Every version's row (its counts and state come at the end) and its intake's steps."""
    with arena.database.session(write=True) as session:
        bot_ids = {
            name: row_id for name, row_id in session.execute(text("SELECT name, id FROM bots"))
        }
        made: dict[int, _Version] = {}
        rows = []
        steps = []
        for b in range(len(plan.bot_start)):
            for k in range(plan.counts[b]):
                version_id = int(plan.ids[b, k])
                made[version_id] = _Version(version_id, b, k + 1, bot_ids[f"bot{b:04d}"])
                at = _at(plan, plan.submitted[b, k])
                rows.append(
                    {
                        "id": version_id,
                        "bot_id": bot_ids[f"bot{b:04d}"],
                        "number": k + 1,
                        "state": VersionState.PLACING,
                        "run": RUN,
                        "build": None,
                        "archive_sha256": f"{version_id:064x}",
                        "submitted_at": at,
                        "updated_at": at,
                    }
                )
                for offset, (kind, verdict, log) in enumerate(
                    (
                        (StepKind.UNPACK, f"unpacked; bot.yaml: run {RUN!r}", ""),
                        (StepKind.BUILD, "nothing to build", ""),
                        (StepKind.VALIDATE, "PASS", VALIDATE_LOG),
                    )
                ):
                    begun = at + dt.timedelta(seconds=5 + 15 * offset)
                    steps.append(
                        {
                            "version_id": version_id,
                            "kind": kind,
                            "state": StepState.PASSED,
                            "started_at": begun,
                            "finished_at": begun + dt.timedelta(seconds=10),
                            "verdict": verdict,
                            "log": log,
                        }
                    )
        rows.sort(key=lambda row: row["id"])
        for chunk in _chunks(rows):
            session.execute(insert(Version), chunk)
        steps.sort(key=lambda row: (row["started_at"], row["version_id"]))
        for chunk in _chunks(steps):
            session.execute(insert(Step), chunk)
    return made


def _chunks(rows: list[dict[str, Any]], size: int = CHUNK) -> Iterator[list[dict[str, Any]]]:
    for begin in range(0, len(rows), size):
        yield rows[begin : begin + size]


@dataclass
class _Tallies:
    """Each version's counts as `recording` and `tallies` keep them, by version id."""

    matches: np.ndarray
    faults: np.ndarray
    wins: np.ndarray
    draws: np.ndarray
    losses: np.ndarray
    last_id: np.ndarray
    last_at: np.ndarray
    # Its newest point of rating history: rating, margin.
    rating: np.ndarray
    margin: np.ndarray
    # Each bot's meetings, by (bot, opponent): matches, wins, draws, losses.
    meetings: dict[tuple[int, int], list[int]] = field(default_factory=dict)

    @classmethod
    def of(cls, versions: int) -> _Tallies:
        size = versions + 1
        return cls(
            *(np.zeros(size, dtype=np.int64) for _ in range(6)),
            np.full(size, -np.inf),
            np.full(size, np.nan),
            np.full(size, np.nan),
        )


def _pick_pairs(
    plan: _Plan, times: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """For each moment, two different bots on the ladder then, at random: each drawn from
    those that had started by then, drawn again if it had been suspended or is the other."""
    starts = plan.active[:, 0]
    order = np.argsort(starts, kind="stable")
    started = np.searchsorted(starts[order], times, side="right")

    def drawn(count: np.ndarray) -> np.ndarray:
        return order[(rng.random(count.size) * count).astype(np.int64)]

    first, second = drawn(started), drawn(started)
    for _ in range(10_000):
        off = (times >= plan.bot_stop[first]) | (times >= plan.bot_stop[second])
        redo = off | (first == second)
        if not redo.any():
            return first, second
        first[redo], second[redo] = drawn(started[redo]), drawn(started[redo])
    raise RuntimeError("no two bots on the ladder at some moment of the season")


def _matches(
    arena: Arena,
    plan: _Plan,
    versions: dict[int, _Version],
    count: int,
    rng: np.random.Generator,
    progress: Callable[[str], None],
) -> tuple[_Tallies, dict[str, int], list[str]]:
    """The season's matches and seats, their results counted into each version's tallies,
    and its rating history; the sample matches played for real."""
    placement = arena.config.placement_matches
    settings = arena.config.tournament.games[0]
    roles = settings.game.roles
    pairs = -(-count // 2)
    # Once a tenth of the bots are on the ladder.
    first_at = float(np.sort(plan.active[:, 0])[len(plan.bot_start) // 10]) + 60.0
    times = np.sort(rng.uniform(first_at, plan.span_s, pairs))
    tallies = _Tallies.of(len(versions))
    samples = {int(i) for i in np.linspace(1, count, min(SAMPLES, count)).round()}
    sample_keys: list[str] = []
    logs = arena.results / LOGS
    logs.mkdir(parents=True, exist_ok=True)
    written = {"matches": 0, "seats": 0, "rating_points": 0, "logs": 0}
    begun = time.monotonic()
    for begin in range(0, pairs, CHUNK // 2):
        at = times[begin : begin + CHUNK // 2]
        a, b = _pick_pairs(plan, at, rng)
        ka = (plan.active[a] <= at[:, None]).sum(axis=1) - 1
        kb = (plan.active[b] <= at[:, None]).sum(axis=1) - 1
        matches, seats, history = [], [], []
        draws = rng.random((at.size, 2, 4))
        seeds = rng.integers(1, 2**31, at.size)
        for i in range(at.size):
            pair_id = 2 * (begin + i) + 1
            seed = int(seeds[i])
            for m in range(2):
                match_id = pair_id + m
                if match_id > count:
                    break
                one = (int(plan.ids[a[i], ka[i]]), int(plan.ids[b[i], kb[i]]))
                seated = one if m == 0 else one[::-1]
                finished = float(at[i]) + 2.5 * m + 2.0
                key = match_key(match_id)
                names = [_name(versions[v]) for v in seated]
                if match_id in samples:
                    scored, faulted, said = _played(arena, key, seed, roles, names)
                    sample_keys.append(key)
                else:
                    scored, faulted, said = _drawn(plan, versions, seated, names, draws[i, m])
                placing = any(tallies.matches[v] < placement for v in seated)
                matches.append(
                    {
                        "id": match_id,
                        "key": key,
                        "pair": pair_id,
                        "game": settings.game.id,
                        "seed": seed,
                        "opening": 0,
                        "state": MatchState.DONE,
                        "placement": placing,
                        "created_at": _at(plan, finished - 10.0),
                        "started_at": _at(plan, finished - 2.0),
                        "finished_at": _at(plan, finished),
                        "transcript": f"results/{key}.json",
                        "summary": said,
                        "lost": 0,
                        "lost_why": "",
                    }
                )
                for index, (role, version) in enumerate(zip(roles, seated, strict=True)):
                    mine, theirs = scored[index], scored[1 - index]
                    seats.append(
                        {
                            "match_id": match_id,
                            "index": index,
                            "role": role,
                            "version_id": version,
                            "bot_id": versions[version].bot_id,
                            "finished_at": _at(plan, finished),
                            "points": mine,
                            "faulted": faulted == index,
                        }
                    )
                    n = tallies.matches[version] = tallies.matches[version] + 1
                    tallies.faults[version] += faulted == index
                    tallies.wins[version] += mine > theirs
                    tallies.draws[version] += mine == theirs
                    tallies.losses[version] += mine < theirs
                    met = (versions[version].bot_id, versions[seated[1 - index]].bot_id)
                    if met[0] != met[1]:
                        counts = tallies.meetings.setdefault(met, [0, 0, 0, 0])
                        counts[0] += 1
                        counts[1 + (mine <= theirs) + (mine < theirs)] += 1
                    if finished >= tallies.last_at[version]:
                        tallies.last_id[version] = match_id
                        tallies.last_at[version] = finished
                    if draws[i, m, 2 + index] < HISTORY_FULL / n:
                        point = _point(plan, versions[version], n, draws[i, m, index])
                        tallies.rating[version], tallies.margin[version] = point
                        history.append(
                            {
                                "version_id": version,
                                "at": _at(plan, finished + 1.0),
                                "rating": point[0],
                                "margin": point[1],
                            }
                        )
                    if plan.chatty[versions[version].bot]:
                        (logs / f"{key}.{role}.log").write_text(CHATTY_LINE, encoding="utf-8")
                        written["logs"] += 1
        with arena.database.session(write=True) as session:
            session.execute(insert(Match), matches)
            session.execute(insert(Seat), seats)
            if history:
                session.execute(insert(RatingPoint), history)
        written["matches"] += len(matches)
        written["seats"] += len(seats)
        written["rating_points"] += len(history)
        done = written["matches"]
        if done % 100_000 < CHUNK or done == count:
            rate = done / max(time.monotonic() - begun, 1e-9)
            progress(f"seeded {done:,} of {count:,} matches ({rate:,.0f}/s)")
    return tallies, written, sample_keys


def _name(version: _Version) -> str:
    return player_name(f"bot{version.bot:04d}", version.number)


def _drawn(
    plan: _Plan,
    versions: dict[int, _Version],
    seated: tuple[int, int],
    names: list[str],
    draws: np.ndarray,
) -> tuple[tuple[float, float], int | None, str]:
    """A result drawn from the two versions' strengths: each seat's points, the seat that
    faulted (if one did), and the match's summary as `recording.summary` writes it."""
    first, second = (versions[v] for v in seated)
    gap = plan.strength[first.bot, first.number - 1] - plan.strength[second.bot, second.number - 1]
    expected = 1 / (1 + 10 ** (-gap / 400))
    drawn = 0.3 * (1 - abs(2 * expected - 1))
    if draws[0] < FAULT_SHARE:
        faulted = int(draws[1] < 0.5)
        scored = (0.0, 1.0) if faulted == 0 else (1.0, 0.0)
        step = 1 + int(draws[1] * 1000) % 9
        beaten = f"{names[1 - faulted]} beat {names[faulted]}"
        said = f"{beaten}; {names[faulted]} faulted: timeout at step {step}"
        return scored, faulted, said
    if draws[1] < expected - drawn / 2:
        return (1.0, 0.0), None, f"{names[0]} beat {names[1]}"
    if draws[1] < expected + drawn / 2:
        return (0.5, 0.5), None, f"{names[0]} drew with {names[1]}"
    return (0.0, 1.0), None, f"{names[1]} beat {names[0]}"


def _point(plan: _Plan, version: _Version, n: int, draw: float) -> tuple[float, float]:
    """A version's rating and margin as fitted after its n-th match: about its strength
    (centred at the mean), off by a share of its margin."""
    margin = 700 / math.sqrt(n + 4)
    off = (2 * draw - 1) * margin / 2
    return float(plan.strength[version.bot, version.number - 1] - plan.centre + off), margin


def _played(
    arena: Arena, key: str, seed: int, roles: tuple[str, ...], names: list[str]
) -> tuple[tuple[float, float], int | None, str]:
    """The match played for real by two random players named as its seats' versions, its
    transcript written signed where the arena keeps it."""
    settings = arena.config.tournament.games[0]
    players = [
        ProgramPlayer(player_spec([sys.executable, str(RANDOM_PLAYER)], name), None)
        for name in names
    ]
    setup = MatchSetup(key, settings.game, players, settings.clocks, Policy.FORFEIT, seed=seed)
    transcript = asyncio.run(play_fresh(setup, arena.results / f"{key}.json", arena.key))
    goals = transcript.goals or {}
    scored = (
        (points(goals[roles[0]], goals[roles[1]]), points(goals[roles[1]], goals[roles[0]]))
        if transcript.complete
        else (0.5, 0.5)
    )
    faulted = next(
        (roles.index(fault.role) for fault in transcript.faults if fault.role in roles), None
    )
    return scored, faulted, summary(transcript)


def _finish_versions(
    arena: Arena, plan: _Plan, versions: dict[int, _Version], tallies: _Tallies
) -> None:
    """Each version's counts, results, last match, rating and state as the season left it."""
    placement = arena.config.placement_matches
    updates = []
    for version in versions.values():
        b, k = version.bot, version.number - 1
        last = k == plan.counts[b] - 1
        v = version.id
        if not last:
            state, reason = VersionState.RETIRED, f"replaced by version {version.number + 1}"
            updated = plan.active[b, k + 1]
        elif math.isfinite(plan.bot_stop[b]):
            state = VersionState.SUSPENDED
            reason = "suspended by the organiser: it plays for another author (seeded)"
            updated = plan.bot_stop[b]
        else:
            matches = int(tallies.matches[v])
            state = VersionState.RATED if matches >= placement else VersionState.PLACING
            reason, updated = "", plan.active[b, k]
        played = math.isfinite(tallies.last_at[v])
        if played:
            updated = max(updated, tallies.last_at[v])
        rated = not math.isnan(tallies.rating[v])
        updates.append(
            {
                "id": v,
                "state": state,
                "reason": reason,
                "updated_at": _at(plan, updated),
                "rating": float(tallies.rating[v]) if rated else None,
                "margin": float(tallies.margin[v]) if rated else None,
                "matches": int(tallies.matches[v]),
                "faults": int(tallies.faults[v]),
                "wins": int(tallies.wins[v]),
                "draws": int(tallies.draws[v]),
                "losses": int(tallies.losses[v]),
                "last_match_id": int(tallies.last_id[v]) if played else None,
                "last_match_at": _at(plan, tallies.last_at[v]) if played else None,
            }
        )
    with arena.database.session(write=True) as session:
        for chunk in _chunks(sorted(updates, key=lambda row: row["id"])):
            session.execute(update(Version), chunk)


def _meetings(arena: Arena, tallies: _Tallies) -> None:
    """Each bot's meetings with each other bot, as `tallies.Meetings` keeps them."""
    rows = [
        {"bot_id": bot, "opponent_id": opponent, **dict(zip(MEETING_COUNTS, counts, strict=True))}
        for (bot, opponent), counts in sorted(tallies.meetings.items())
    ]
    with arena.database.session(write=True) as session:
        for chunk in _chunks(rows):
            session.execute(insert(Meeting), chunk)


def _audit(arena: Arena, plan: _Plan, versions: dict[int, _Version]) -> None:
    """The audit log of the season: each submission, and each author's sign-ins (one at
    their bot's start and one a week after, while their bot plays)."""
    rows = []
    for version in versions.values():
        name = f"author{version.bot:04d}"
        rows.append(
            {
                "at": _at(plan, plan.submitted[version.bot, version.number - 1]),
                "author": name,
                "action": "submitted",
                "subject": f"bot bot{version.bot:04d} v{version.number}",
                "address": ADDRESS,
                "detail": "",
            }
        )
    for b in range(len(plan.bot_start)):
        end = min(plan.bot_stop[b], plan.span_s)
        for moment in np.arange(plan.bot_start[b] - 300, end, 7 * 86400.0):
            name = f"author{b:04d}"
            rows.append(
                {
                    "at": _at(plan, moment),
                    "author": name,
                    "action": "signin",
                    "subject": f"author {name}",
                    "address": ADDRESS,
                    "detail": "",
                }
            )
    rows.sort(key=lambda row: row["at"])
    with arena.database.session(write=True) as session:
        for chunk in _chunks(rows):
            session.execute(insert(AuditEntry), chunk)


def _bot_files(arena: Arena, versions: dict[int, _Version]) -> None:
    """Each version's archive as submitted, and the directory of each version that may
    still play (placing or rated: the last of a bot not suspended), as the intake leaves
    them. Failed versions keep none; retired ones keep their archive."""
    for version in versions.values():
        arena.archive(version.id).write_bytes(_archive(version.bot))
    with arena.database.session() as session:
        playing = {
            row_id
            for (row_id,) in session.execute(
                text("SELECT id FROM versions WHERE state IN ('placing', 'rated')")
            )
        }
    for version_id in playing:
        directory = arena.bot_directory(version_id)
        directory.mkdir(parents=True, exist_ok=True)
        shutil.copy(RANDOM_PLAYER, directory / RANDOM_PLAYER.name)
        name = f"bot{versions[version_id].bot:04d}"
        (directory / "bot.yaml").write_text(f"name: {name}\nrun: {RUN}\n", encoding="utf-8")


def _archive(bot: int) -> bytes:
    """A bot's archive as an author sends it: the random player and its bot.yaml."""
    name = f"bot{bot:04d}"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as packed:
        packed.add(RANDOM_PLAYER, arcname=f"{name}/{RANDOM_PLAYER.name}")
        manifest = f"name: {name}\nrun: {RUN}\n".encode()
        info = tarfile.TarInfo(f"{name}/bot.yaml")
        info.size = len(manifest)
        packed.addfile(info, io.BytesIO(manifest))
    return buffer.getvalue()
