"""Recording a finished ladder match: its transcript checked against its seats, the match
marked done with its seats' points and faults, its versions' counts and results and its
bots' meetings (`tallies`), a placement ended, a suspension for faults; all in the one
transaction, so that a kill loses nothing finished.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from referee.arena.ladder import tallies
from referee.arena.store import lifecycle
from referee.arena.store.db import (
    ON_LADDER,
    Match,
    MatchState,
    Seat,
    Version,
    VersionState,
    utcnow,
)
from referee.arena.store.home import Arena
from referee.errors import ArenaError, TranscriptError
from referee.players.chance import CHANCE_NAME
from referee.records.replay import replay
from referee.records.transcript import Fault, Transcript, read_signed, read_transcript
from referee.records.transcript import Seat as TranscriptSeat
from referee.tournaments.ratings import points

# A fault's detail as a suspension's reason quotes it.
DETAIL_CHARS = 200


@dataclass(frozen=True)
class Recorded:
    """What recording a match did: its summary, the points of each pair of its versions
    (the lower id first), and the versions suspended, each with its reason."""

    key: str
    summary: str
    results: list[tuple[int, int, float]]
    suspended: list[tuple[str, str]]


def verified(arena: Arena, key: str) -> Transcript | None:
    """The transcript of match `key` if it is on disk, complete and verifying."""
    path = arena.results / f"{key}.json"
    if not path.is_file():
        return None
    try:
        transcript, signature = read_signed(path, arena.key.public)
    except TranscriptError:
        return None
    if signature.fails or transcript.match_id != key or not transcript.settled:
        return None
    return transcript if replay(transcript).problem is None else None


def record(
    session: Session, arena: Arena, played: Sequence[tuple[int, Transcript]]
) -> list[Recorded]:
    """Record the results of a batch of matches (their rows and transcripts) in `session`:
    a commit and a thread's turn per batch, not per match, which the ladder's rate is bound
    by. What each recording did; none for a match recorded before."""
    rows = [row for row, _ in played]
    # Their versions locked first: what recording reads of them (a placement's state, its
    # counts) is what it writes over, and the organiser may suspend one meanwhile.
    lifecycle.locked(
        session, Version.id.in_(select(Seat.version_id).where(Seat.match_id.in_(rows)))
    )
    # Loaded at once, with what recording reads of them; found by `get` below.
    session.scalars(
        select(Match)
        .where(Match.id.in_(rows))
        .options(selectinload(Match.seats).selectinload(Seat.version).selectinload(Version.bot))
    ).all()
    meetings = tallies.Meetings()
    found = (_record_one(session, arena, row, t, meetings) for row, t in played)
    recorded = [one for one in found if one is not None]
    meetings.save(session)
    return recorded


def _record_one(
    session: Session, arena: Arena, row: int, transcript: Transcript, meetings: tallies.Meetings
) -> Recorded | None:
    """Record a match's result in `session`, its bots' meeting in `meetings`; None when it
    was recorded before."""
    match = session.get(Match, row)
    if match is None or match.state == MatchState.DONE:
        return None
    names = {seat.role: seat.version.player_name for seat in match.seats}
    played = {s.role: s.player for s in transcript.seats if s.player != CHANCE_NAME}
    if played != names:
        raise ArenaError(f"{match.key}: its transcript names other players than its seats")
    match.state = MatchState.DONE
    match.finished_at = utcnow()
    match.transcript = str((arena.results / f"{match.key}.json").relative_to(arena.directory))
    match.summary = summary(transcript)
    faulted = {fault.role for fault in transcript.faults}
    goals = transcript.goals if transcript.complete else None
    for seat in match.seats:
        if goals is not None:
            other = next(s for s in match.seats if s is not seat)
            seat.points = points(goals[seat.role], goals[other.role])
        seat.faulted = seat.role in faulted
        seat.finished_at = match.finished_at
        version = seat.version
        version.matches += 1
        version.faults += seat.faulted
        version.updated_at = match.finished_at
        if (
            version.state == VersionState.PLACING
            and version.matches >= arena.config.placement_matches
        ):
            lifecycle.move(version, VersionState.RATED, now=match.finished_at)
    tallies.tally(match)
    meetings.add(match)
    suspended = [
        (seat.version.player_name, reason)
        for seat in match.seats
        if (reason := _suspension(session, arena, seat.version, match, transcript))
    ]
    first, second = sorted(match.seats, key=lambda s: s.version_id)
    results = (
        [(first.version_id, second.version_id, first.points)] if first.points is not None else []
    )
    return Recorded(match.key, match.summary, results, suspended)


def _suspension(
    session: Session, arena: Arena, version: Version, match: Match, transcript: Transcript
) -> str | None:
    """Suspend `version` if it faulted in too many of its matches; the reason, if so."""
    config = arena.config
    if version.state not in ON_LADDER or version.matches < config.suspend_after:
        return None
    if version.faults <= config.suspend_faults * version.matches:
        return None
    first = session.execute(
        select(Match.key, Seat.role)
        .join(Seat, Seat.match_id == Match.id)
        # Done: a match has its moment then, and only then. By its state, SQLite would walk
        # the season's finished matches in order to find the version's first fault.
        .where(Seat.version_id == version.id, Seat.faulted, Match.finished_at.is_not(None))
        .order_by(Match.finished_at, Match.id)
        .limit(1)
    ).first()
    shown = "its transcript cannot be read"
    if first is not None:
        key, role = first
        found = transcript if key == match.key else _read(arena, key)
        fault = next((f for f in found.faults if f.role == role), None) if found else None
        if fault is not None:
            shown = describe_fault(key, fault)
    reason = (
        f"suspended: it faulted in {version.faults} of its {version.matches} matches"
        f" (more than {config.suspend_faults:g} of them); the first: {shown}"
    )
    lifecycle.suspend(version, reason)
    return reason


def _read(arena: Arena, key: str) -> Transcript | None:
    try:
        return read_transcript(arena.results / f"{key}.json")
    except TranscriptError:
        return None


def describe_fault(key: str, fault: Fault) -> str:
    """A fault in one line: its kind, match, step and detail."""
    detail = " ".join(fault.detail.split())
    if len(detail) > DETAIL_CHARS:
        detail = detail[: DETAIL_CHARS - 3] + "..."
    return f"{fault.kind} in {key} at step {fault.step}: {detail}"


def summary(transcript: Transcript) -> str:
    """A match in one line: who won, and who faulted how."""
    seats = [seat for seat in transcript.seats if seat.player != CHANCE_NAME]
    goals = transcript.goals if transcript.complete else None
    if goals is None:
        why = transcript.rules_fault or transcript.end_reason
        head = f"no result ({why})"
    else:
        first, second = seats
        scored = points(goals[first.role], goals[second.role])
        head = (
            f"{first.player} drew with {second.player}"
            if scored == 0.5
            else f"{first.player} beat {second.player}"
            if scored == 1
            else f"{second.player} beat {first.player}"
        )
    return "; ".join([head, *_fault_lines(seats, transcript.faults)])


def _fault_lines(seats: Iterable[TranscriptSeat], faults: Sequence[Fault]) -> list[str]:
    """Each seat's first fault, if it has one."""
    lines = []
    for seat in seats:
        fault = next((f for f in faults if f.role == seat.role), None)
        if fault is not None:
            lines.append(f"{seat.player} faulted: {fault.kind} at step {fault.step}")
    return lines
