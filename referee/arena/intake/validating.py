"""A built version validated in the arena's games, under their clocks and the arena's
limits: validate's report as the author reads it (no path of the machine it ran on), and
the reason and advice when it fails. Run by the intake here or on a worker
(`intake_venue`)."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from referee.arena.store.manifest import bot_environment
from referee.clock import Clocks
from referee.errors import RefereeError
from referee.games import Game
from referee.players.builtin import program_spec
from referee.tournaments.config import GameSettings, TournamentConfig
from referee.validate.checks import Report, Verdict
from referee.validate.run import validate
from referee.validate.text import report_text

# The validate step's log is its report as a terminal this wide shows it.
LOG_WIDTH = 120


@dataclass(frozen=True)
class Validated:
    """How a validation went: its verdict (one line) and log; the reason it failed and
    validate's advice, if it did."""

    verdict: str
    log: str
    failure: str | None = None
    advice: str = ""


async def validate_version(
    directory: Path,
    run: str,
    player_name: str,
    tournament: TournamentConfig,
    matches_per_role: int,
    hidden: dict[Path, str],
    progress: Callable[[str], None] = lambda _log: None,
) -> Validated:
    """Validate the bot in `directory`, run by `run`, in `tournament`'s games and limits;
    `hidden` names the paths its author must not read (each shown by its stand-in), and
    `progress` is told the log as each group of games under one clock ends."""
    try:
        spec = program_spec(
            run, "a person cannot be a bot", player_name, directory, directory, bot_environment()
        )
    except RefereeError as error:
        return Validated("", "", f"bot.yaml: run: {error}")
    spec = replace(spec, limits=tournament.players[0].spec.limits)
    reports: list[Report] = []
    groups = _by_clocks(tournament.games)
    texts: list[str] = []
    for clocks, games in groups.items():
        with _scratch() as workdir:
            report = await validate(spec, games, matches_per_role, clocks, workdir)
        reports.append(report)
        shown = _report_without_paths(report, {**hidden, directory: "bot", workdir: "validation"})
        text = report_text(shown, LOG_WIDTH)
        if len(groups) > 1:
            names = ", ".join(game.id for game in games)
            text = f"{names}, {clocks.start_ms} ms to start, {clocks.play_ms} ms a move:\n{text}"
        texts.append(text)
        log = "\n\n".join(texts)
        progress(log)
        if report.verdict is Verdict.FAIL:
            advice = "\n".join(
                f"{c.name}: {c.advice}"
                for c in report.checks
                if c.verdict is Verdict.FAIL and c.advice
            )
            return Validated("", log, f"validation: {report.summary()}", advice)
    return Validated("; ".join(report.summary() for report in reports), "\n\n".join(texts))


def _by_clocks(games: tuple[GameSettings, ...]) -> dict[Clocks, list[Game]]:
    """The arena's games grouped by their clocks: validate plays each group under its own."""
    groups: dict[Clocks, list[Game]] = {}
    for settings in games:
        groups.setdefault(settings.clocks, []).append(settings.game)
    return groups


@contextlib.contextmanager
def _scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="referee-intake-") as name:
        yield Path(name)


def without_paths(text: str, hidden: dict[Path, str]) -> str:
    """`text` with each path of `hidden` (and whatever is under it) named by its stand-in:
    an author reads no path of the arena's machine. The longest first, so that a path
    inside another is named as its own."""
    spellings = {str(path): name for path, name in hidden.items()}
    spellings |= {str(path.resolve()): name for path, name in hidden.items()}
    for spelled in sorted(spellings, key=len, reverse=True):
        text = text.replace(spelled, spellings[spelled])
    return text


def _report_without_paths(report: Report, hidden: dict[Path, str]) -> Report:
    """The report with every path of `hidden` in what it quotes (the checks' details and
    advice, the program's last words, why it stopped) named by its stand-in: before the
    text is fit to its width, which may break a long path across lines."""

    def shown(text: str) -> str:
        return without_paths(text, hidden)

    checks = [
        replace(
            check,
            detail=shown(check.detail),
            advice=shown(check.advice),
            stderr=tuple(map(shown, check.stderr)),
            stdout=tuple(map(shown, check.stdout)),
        )
        for check in report.checks
    ]
    command = tuple(map(shown, report.command))
    return replace(report, checks=checks, command=command, stopped=shown(report.stopped))
