"""A tournament's results directory: what has been played, what must be played (again), and
what is set aside.

The directory is the tournament's only state: a match is done when its transcript is
complete and was played by the programs the config names now. A match whose player's
command has changed, or that the schedule no longer has, is set aside (moved, with its
logs, under `set-aside/`), never deleted and never silently counted.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from referee.errors import ConfigError, RefereeError, SchemaVersionError, TranscriptError
from referee.players.chance import CHANCE_NAME
from referee.records.files import check_writable_dir, read_text, write_atomic
from referee.records.signing import SigningKey
from referee.records.transcript import (
    BookLine,
    Transcript,
    read_signed,
    read_transcript,
    transcript_files,
)
from referee.tournaments.config import TournamentConfig
from referee.tournaments.config_models import TournamentFormat
from referee.tournaments.knockout import SEEDING_FILE, read_bracket
from referee.tournaments.played import MatchResult, Played
from referee.tournaments.schedule import ScheduledMatch
from referee.tournaments.sprt import SprtSettings
from referee.tournaments.standings import Standings, compute
from referee.tournaments.swiss import DEFAULT_TIEBREAKS, ROUNDS_FILE, Tiebreak, read_rounds

LOGS = "logs"
SET_ASIDE = "set-aside"
# What `referee standings` needs to know of the schedule (JSON, named so that it is not taken
# for a transcript): how many matches it has, and how
# ratings are anchored. Written at the start of every run.
INFO_FILE = "tournament.info"


def transcript_path(config: TournamentConfig, match: ScheduledMatch) -> Path:
    return config.output / f"{match.match_id}.json"


def log_path(config: TournamentConfig, match: ScheduledMatch, role: str) -> Path:
    return config.output / LOGS / f"{match.match_id}.{role}.log"


def as_written(config: TournamentConfig, transcript: Transcript) -> Transcript:
    """A match's transcript as the tournament writes it: unchanged, unless the config's
    records are to name no path of this machine (`portable_records`, an arena's). Then each
    log is named from the results directory (`logs/KEY.ROLE.log`), and the rulesheet and
    the book from the config's folder, as the config named them (by their file names alone
    if they are elsewhere). A seat's command is the match's own business (`PlayerSpec.recorded`)."""
    if not config.portable_records:
        return transcript
    seats = [
        replace(seat, log=None if seat.log is None else _named_from(seat.log, config.output))
        for seat in transcript.seats
    ]
    base = config.path.parent
    rulesheet, book = transcript.rulesheet, transcript.book
    if rulesheet is not None:
        rulesheet = replace(rulesheet, path=_named_from(rulesheet.path, base))
    if book is not None:
        book = replace(book, source=_named_from(book.source, base))
    return replace(transcript, seats=seats, rulesheet=rulesheet, book=book)


def _named_from(path: str, base: Path) -> str:
    """An absolute `path` named from `base` if it is inside it, else by its file name
    alone; any other as it is."""
    if not Path(path).is_absolute():
        return path
    if Path(path).is_relative_to(base):
        return Path(path).relative_to(base).as_posix()
    return Path(path).name


def write_log(path: Path, data: bytes) -> None:
    """Write a player's log that a worker sent: as a player writes its own, with no sync to
    disk, for no run needs it to resume."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def result_files(config: TournamentConfig) -> list[Path]:
    """The transcripts `--restart` deletes (with the logs and what was set aside)."""
    if not config.output.is_dir():
        return []
    return [path for path in transcript_files(config.output) if _is_transcript(path)]


def clear_results(config: TournamentConfig) -> None:
    """Remove a tournament's transcripts, logs, set-aside matches and a Swiss's pairings, to
    start over."""
    output = config.output
    for path in result_files(config):
        path.unlink()
    for kept in (ROUNDS_FILE, SEEDING_FILE):
        (output / kept).unlink(missing_ok=True)
    for path in output.glob(".*.tmp"):
        path.unlink()
    for directory in (LOGS, SET_ASIDE):
        shutil.rmtree(output / directory, ignore_errors=True)


def _is_transcript(path: Path) -> bool:
    try:
        read_transcript(path)
    except SchemaVersionError:
        return True
    except TranscriptError:
        return False
    return True


@dataclass
class Survey:
    """What a run must do: the matches to play, what is kept of the complete ones (never
    their transcripts, which stay on the disk), and one line for each change of the field
    since the last run."""

    todo: list[ScheduledMatch] = field(default_factory=list)
    done: list[MatchResult] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)


def _settled(transcript: Transcript, config: TournamentConfig) -> bool:
    """Whether a match needs no playing again: it reached its end, or the rules failed it
    under the limits the config still gives their states (with others it may not fail)."""
    fault = transcript.rules_fault
    if fault is None or fault.state_memory_mb is None:
        return transcript.settled
    limits = (fault.state_memory_mb, fault.state_seconds)
    return limits == (config.states.memory_mb, config.states.seconds)


def survey(
    config: TournamentConfig,
    schedule: Sequence[ScheduledMatch],
    fingerprints: Mapping[str, str],
    key: SigningKey,
) -> Survey:
    """Compare the results directory with the schedule and the players as they are now.

    Sets aside the matches a player played with another command than its current one, and
    the matches no longer in the schedule. ConfigError for results that cannot be mixed
    with this config's (other clocks, policy, seed or opening, or a signature that fails),
    before anything is moved.
    """
    output = config.output
    check_writable_dir(output, str(config.path), "output ")
    restart = f"run with --restart to start over, or set another output in {config.path}"
    # A temporary file is what a kill during a write leaves; its match is played again.
    for path in output.glob(".*.tmp"):
        path.unlink(missing_ok=True)
    scheduled = {match.match_id: match for match in schedule}
    result = Survey()
    stale: dict[str, list[Path]] = defaultdict(list)  # player -> its matches with another command
    gone: dict[str, list[Path]] = defaultdict(list)  # player no longer in the field -> matches
    unscheduled: list[Path] = []
    played: dict[str, MatchResult] = {}  # the matches that need no playing again
    before: set[str] = set()  # the players of every match found
    entrants = {entrant.name for entrant in config.players}
    for path in transcript_files(output):
        match = scheduled.get(path.stem)
        if match is None:
            try:
                transcript = read_transcript(path)
            except SchemaVersionError:  # a transcript all the same, of another version
                unscheduled.append(path)
                continue
            except TranscriptError:  # some other JSON file: not ours to move
                continue
            before |= {seat.player for seat in transcript.seats}
            absent = sorted({seat.player for seat in transcript.seats} - entrants - {CHANCE_NAME})
            (gone[absent[0]] if absent else unscheduled).append(path)
            continue
        try:
            transcript, signature = read_signed(path, key.public)
        except TranscriptError as error:
            result.unreadable.append(str(error))
            continue
        if signature.fails:
            raise ConfigError(f"{path}: {signature}; {restart}")
        before |= {seat.player for seat in transcript.seats}
        difference = _difference(config, match, transcript)
        if difference:
            raise ConfigError(f"{path}: played with {difference}; {restart}")
        changed = [
            seat.player
            for seat in transcript.seats
            if seat.player != CHANCE_NAME and seat.fingerprint != fingerprints.get(seat.player)
        ]
        if changed:
            stale[changed[0]].append(path)
        elif _settled(transcript, config):
            played[match.match_id] = MatchResult.of(transcript)
    aside = output / SET_ASIDE / datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    for player, paths in sorted(stale.items()):
        _set_aside(paths, aside)
        result.changes.append(
            f"player {player}: its command or program has changed since {len(paths)} of its"
            f" matches; they are set aside in {aside} and will be played again"
        )
    for player, paths in sorted(gone.items()):
        _set_aside(paths, aside)
        result.changes.append(
            f"player {player}: no longer in the config; its {len(paths)} matches are set aside"
            f" in {aside}"
        )
    if unscheduled:
        _set_aside(unscheduled, aside)
        result.changes.append(
            f"{len(unscheduled)} matches are no longer in the schedule (fewer rounds or games,"
            f" or another format); they are set aside in {aside}"
        )
    result.done = list(played.values())
    result.todo = [match for match in schedule if match.match_id not in played]
    # A Swiss or a knockout schedules round by round: a later round's players and matches are
    # not new to the field, and its runner says who is.
    if before and config.format not in (TournamentFormat.SWISS, TournamentFormat.KNOCKOUT):
        new = Counter(
            name for match in result.todo for name in set(match.players) if name not in before
        )
        for name in (entrant.name for entrant in config.players):
            if new[name]:
                result.changes.append(
                    f"player {name}: new in the field; {new[name]} matches to play"
                )
        # Beyond the rounds the schedule had when it was last played: not the rounds that a
        # stopped run left unplayed.
        info = read_info(output)
        rounds = info.rounds if info is not None and info.rounds is not None else {}
        more = [m for m in result.todo if m.game.id in rounds and m.round > rounds[m.game.id]]
        if more:
            result.changes.append(f"rounds: {len(more)} matches of the added rounds are to play")
    return result


def _set_aside(paths: Sequence[Path], directory: Path) -> None:
    """Move transcripts and their logs into `directory`, keeping their names."""
    (directory / LOGS).mkdir(parents=True, exist_ok=True)
    for path in paths:
        for log in (path.parent / LOGS).glob(f"{path.stem}.*.log"):
            log.rename(directory / LOGS / log.name)
        path.rename(directory / path.name)


def _difference(config: TournamentConfig, match: ScheduledMatch, transcript: Transcript) -> str:
    """What differs between a scheduled match and the one a transcript records, if anything."""
    if transcript.game != match.game.id:
        return "a different game"
    if tuple(seat.player for seat in transcript.seats) != match.players:
        return "different players"
    if transcript.clocks != match.clocks.recorded():
        return "different clocks"
    if transcript.time_margin_ms != match.clocks.margin_ms:
        return f"a time margin of {transcript.time_margin_ms} ms, not {match.clocks.margin_ms}"
    seat_clocks = match.seat_clocks or (match.clocks,) * len(transcript.seats)
    for seat, own in zip(transcript.seats, seat_clocks, strict=True):
        if transcript.clocks_of(seat) != own.recorded():
            return f"different clocks for {seat.player}"
    if transcript.policy != config.policy:
        return "a different policy"
    if transcript.seed != match.seed:
        return "a different seed"
    if transcript.max_steps != match.max_steps:
        return f"max_steps {transcript.max_steps}, not {match.max_steps}"
    if transcript.book != match.book:
        return _book_difference(transcript.book, match.book)
    if transcript.opening != match.opening:
        return f"an opening of {transcript.opening} steps, not {match.opening}"
    return ""


def _book_difference(played: BookLine | None, scheduled: BookLine | None) -> str:
    if played is None:
        return "an opening at random, not from a book"
    if scheduled is None:
        return f"an opening from the book {played.source}, not at random"
    if (played.source, played.line) != (scheduled.source, scheduled.line):
        now = f"{scheduled.source}:{scheduled.line}"
        return f"the opening at {played.source}:{played.line}, not {now}"
    return f"another opening at {played.source}:{played.line} (the book has changed)"


@dataclass(frozen=True)
class TournamentInfo:
    """What the results directory says of its tournament, beyond its transcripts."""

    name: str
    format: str
    scheduled: int
    anchor: str | None = None
    sprt: dict[str, float] | None = None
    tested: str | None = None  # the SPRT's first player, whose strength is tested
    # Each game's rounds when the schedule was last made (none in an older directory).
    rounds: dict[str, int] | None = None
    # A Swiss's tie-breaks, in order (none in an older directory: the default ones).
    tiebreaks: list[str] | None = None

    def swiss_tiebreaks(self) -> tuple[Tiebreak, ...]:
        """What ranks a Swiss's equal scores."""
        return tuple(map(Tiebreak, self.tiebreaks or DEFAULT_TIEBREAKS))

    def sprt_test(self) -> tuple[SprtSettings, str] | None:
        """The SPRT's settings and tested player, for a tournament that is one."""
        if self.sprt is None or self.tested is None:
            return None
        return SprtSettings(**self.sprt), self.tested


def write_info(config: TournamentConfig, scheduled: int) -> None:
    info = TournamentInfo(
        config.name,
        str(config.format),
        scheduled,
        config.anchor,
        asdict(config.sprt) if config.sprt else None,
        config.players[0].name if config.sprt else None,
        {settings.game.id: settings.rounds for settings in config.games},
        [str(which) for which in config.tiebreaks]
        if config.format is TournamentFormat.SWISS
        else None,
    )
    write_atomic(config.output / INFO_FILE, json.dumps(asdict(info), indent=2) + "\n")


def read_info(directory: Path) -> TournamentInfo | None:
    """The tournament's info file, or None where there is none or it cannot be used (standings
    then count only what is there). Read like any file a stranger may have written: bounded,
    never a FIFO, each field checked."""
    try:
        data: Any = json.loads(read_text(directory / INFO_FILE, RefereeError, 64 * 1024))
        info = TournamentInfo(**data)
        test = info.sprt_test()
        if test is not None and (test[0].problem() or not isinstance(info.tested, str)):
            return None
    except (RefereeError, ValueError, TypeError, RecursionError):
        return None
    fields_ok = (
        type(info.scheduled) is int
        and isinstance(info.anchor, str | None)
        and isinstance(info.sprt, dict | None)
        and (
            info.rounds is None
            or (
                isinstance(info.rounds, dict)
                and all(type(rounds) is int for rounds in info.rounds.values())
            )
        )
        and (
            info.tiebreaks is None
            or (
                isinstance(info.tiebreaks, list)
                and all(name in set(Tiebreak) for name in info.tiebreaks)
            )
        )
    )
    return info if fields_ok else None


def directory_standings(directory: Path, matches: Iterable[Played]) -> Standings:
    """The standings of a results directory's matches (read once, one at a time: transcripts
    as they are read from its files), as its tournament info says to reckon them (how many
    matches were scheduled, the ratings' anchor, the SPRT), if any."""
    info = read_info(directory)
    swiss = read_rounds(directory) if info and info.format == TournamentFormat.SWISS else None
    knockout = (
        read_bracket(directory) if info and info.format == TournamentFormat.KNOCKOUT else None
    )
    return compute(
        matches,
        info.anchor if info else None,
        info.scheduled if info else None,
        info.sprt_test() if info else None,
        swiss,
        knockout,
        info.swiss_tiebreaks() if info else DEFAULT_TIEBREAKS,
    )
