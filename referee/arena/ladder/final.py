"""The season's last day: submissions closed, then a final among each bot's current version
(the one on the ladder), played as a tournament (round robin or Swiss) with the tournament
machinery, on the arena's games, clocks and limits, its transcripts signed with the arena's
key. Its results, report and standings are kept in the arena's `final/`, beside the
ladder's, and shown by the served arena (`/final/`, `/api/final`).

The final is fair where the ladder's ratings are not: every bot plays its current version
only, against every other (or as the Swiss pairs them), as many times in each seat.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from referee.arena.intake import submissions
from referee.arena.ladder.queue import field_players, ladder_members
from referee.arena.store.errors import NotFound
from referee.arena.store.home import Arena, inside
from referee.errors import ArenaError, ConfigError
from referee.records.files import write_atomic
from referee.records.signing import SigningKey, results_key
from referee.report.site import Site, write_report
from referee.tournaments.config import TournamentConfig
from referee.tournaments.formats import Format
from referee.tournaments.results import directory_standings
from referee.tournaments.standings import Standings, load_results
from referee.tournaments.standings_tables import render

FINAL = "final"
FORMATS = ("round-robin", "swiss")


@dataclass(frozen=True)
class FinalPaths:
    """Where a final keeps what it made, under the arena's directory."""

    directory: Path

    @property
    def results(self) -> Path:
        return self.directory / "results"

    @property
    def report(self) -> Path:
        return self.directory / "report"

    @property
    def standings(self) -> Path:
        return self.directory / "standings.json"

    @property
    def asked(self) -> Path:
        """The format and rounds the final was last asked for."""
        return self.directory / "final.json"


def final_paths(arena: Arena) -> FinalPaths:
    return FinalPaths(arena.directory / FINAL)


def final_config(arena: Arena, fmt: str, rounds: int) -> TournamentConfig:
    """The final's tournament: each bot's version on the ladder, in `fmt` over `rounds`,
    under the arena's tournament keys; ArenaError when fewer than two bots are on it."""
    if fmt not in FORMATS:
        raise ArenaError(f"format {fmt!r}: give one of {', '.join(FORMATS)}")
    members = sorted(ladder_members(arena).values(), key=lambda member: member.name)
    if len(members) < 2:
        raise ArenaError(f"a final needs two bots on the ladder; this arena has {len(members)}")
    config = arena.config
    players = field_players(arena, members)
    try:
        return config.final_config(players, final_paths(arena).results, fmt, rounds)
    except ConfigError as error:  # a Swiss of an arena of several games, say
        raise ArenaError(f"this final cannot be played: {error}") from None


def begin(arena: Arena, fmt: str, rounds: int) -> tuple[TournamentConfig, SigningKey]:
    """Ready the final: its tournament and key; then, only once both are, submissions
    closed (a final refused, too few bots or a format unknown, changes nothing)."""
    settings = final_config(arena, fmt, rounds)
    key = final_key(arena)
    submissions.close(arena)
    asked = final_paths(arena).asked
    asked.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(asked, json.dumps({"format": fmt, "rounds": rounds}) + "\n")
    return settings, key


def asked_for(arena: Arena) -> tuple[str, int]:
    """The format and rounds of the final last begun; ("", 0) if none was, or it is not
    known (a final begun before they were kept)."""
    try:
        data = json.loads(final_paths(arena).asked.read_text(encoding="utf-8"))
        return str(data["format"]), int(data["rounds"])
    except (OSError, ValueError, KeyError, TypeError):
        return "", 0


def final_bundles(arena: Arena, settings: TournamentConfig) -> list[tuple[int, str]]:
    """The final's versions, each id and player name: what workers are sent as bundles."""
    names = {entrant.name for entrant in settings.players}
    return [(m.version, m.name) for m in ladder_members(arena).values() if m.name in names]


def final_key(arena: Arena) -> SigningKey:
    """The arena's key, which signs the final's transcripts as it signs the ladder's."""
    results = final_paths(arena).results
    results.mkdir(parents=True, exist_ok=True)
    key, _ = results_key(results, arena.key.path)
    return key


@dataclass(frozen=True)
class Final:
    """A final played and published: its report, its standings, and the transcripts left
    out of them, each with why."""

    site: Site
    standings: Standings
    problems: list[str]


def publish(arena: Arena, results: Path, key: SigningKey) -> Final:
    """The final's report and standings, written where the served arena shows them: from
    its transcripts that verify under the arena's key."""
    paths = final_paths(arena)
    # Written whole beside the last one, then put in its place: no page of an earlier
    # final's matches is left among this one's.
    fresh = paths.report.with_name(paths.report.name + ".new")
    shutil.rmtree(fresh, ignore_errors=True)
    # Served by the arena, whose policy refuses inline scripts: its pages link its assets.
    site = write_report(results, fresh, key.public, assets="/assets/")
    old = paths.report.with_name(paths.report.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if paths.report.exists():
        paths.report.rename(old)
    fresh.rename(paths.report)
    shutil.rmtree(old, ignore_errors=True)
    site = replace(site, index=paths.report / site.index.relative_to(fresh))
    transcripts, problems = load_results(results, key.public)
    standings = directory_standings(results, transcripts)
    write_atomic(paths.standings, render(standings, Format.JSON) + "\n")
    return Final(site, standings, [str(problem) for problem in problems])


# What `/final/` says before a final is published.
NO_FINAL = (
    "no final has been played yet: once the organiser has played it, its standings and"
    " every match are here"
)


def report_page(arena: Arena, path: str) -> Path:
    """A page of the final's report (`index.html`, `matches/NAME.html`); NotFound for any
    other path, or before the final is published (saying so, NO_FINAL)."""
    report = final_paths(arena).report
    if not (report / "index.html").is_file():
        raise NotFound(NO_FINAL)
    found = inside(report, path or "index.html")
    if found.suffix != ".html" or not found.is_file():
        raise NotFound(f"{path[:80]!r}: no such page of the final")
    return found


def published(arena: Arena) -> dict[str, Any]:
    """The final as the served arena shows it: whether submissions are closed, and the
    standings once the final has been played (None before)."""
    paths = final_paths(arena)
    try:
        standings = json.loads(paths.standings.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        standings = None
    report = paths.report / "index.html"
    with arena.database.session() as session:
        closed = submissions.closed(session)
    return {
        "closed": closed,
        "standings": standings,
        "report": "/final/index.html" if standings is not None and report.is_file() else None,
    }
