"""`referee tournament`, `standings`, `report`: a tournament run, and its results directory
as standings or a site."""

import contextlib
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from referee.cli.failures import EXIT_FAILED, say_error, user_errors
from referee.cli.options import FormatOption, JsonOption, KeyOption, SigningKeyOption, TraceOption
from referee.errors import RefereeError
from referee.tournaments.formats import Format

if TYPE_CHECKING:
    from collections.abc import Iterator

    from referee.records.transcript import Transcript
    from referee.tournaments.runner import OpenVenue

# What a command runs is imported when it runs: every command's help and shell completion
# start with this module, and need none of it.


def _print_standings(results: Path, fmt: Format, as_json: bool, pinned: str | None) -> None:
    """Compute standings from a results directory and print them, fit to the terminal; exit
    1 if a file was bad.

    The transcripts are read one at a time, each counted and let go. The directory's
    tournament info, when there is one, says how many matches were scheduled, how ratings
    are anchored, and what the SPRT tests.
    """
    from referee.cli.results import expected_key
    from referee.cli.width import terminal_width
    from referee.errors import TranscriptError
    from referee.plaintext import fit
    from referee.tournaments.clock_notes import ClockNotes
    from referee.tournaments.results import directory_standings
    from referee.tournaments.standings import read_results
    from referee.tournaments.standings_tables import as_json as standings_json
    from referee.tournaments.standings_tables import render

    if not results.is_dir():
        raise RefereeError(f"{results}: no such results directory")
    problems = 0
    clocks = ClockNotes()

    def readable() -> "Iterator[Transcript]":
        nonlocal problems
        for found in read_results(results, expected_key(results, pinned)):
            if isinstance(found, TranscriptError):
                problems += 1
                say_error(f"left out of the standings: {found}")
            else:
                clocks.add(found)
                yield found

    standings = directory_standings(results, readable())
    if as_json or fmt is Format.JSON:
        typer.echo(json.dumps(standings_json(standings) | clocks.to_json(), indent=2))
    else:
        typer.echo(render(standings, fmt, terminal_width()))
        # The clocks, where the players' differ or a margin forgave lateness; a table of
        # values (CSV) has no place for a line.
        line = clocks.text()
        if line is not None and fmt is not Format.CSV:
            typer.echo(f"\n{fit(line, terminal_width())}")
    if problems:
        raise typer.Exit(EXIT_FAILED)


@user_errors
def tournament(
    config: Annotated[Path, typer.Argument(metavar="CONFIG", help="Tournament config, YAML.")],
    restart: Annotated[
        bool,
        typer.Option(
            "--restart", help="Delete earlier results (asking first on a terminal) and start over."
        ),
    ] = False,
    fmt: FormatOption = Format.TABLE,
    as_json: JsonOption = False,
    signing_key: SigningKeyOption = None,
    trace: TraceOption = None,
    workers: Annotated[
        int | None,
        typer.Option(
            min=1,
            metavar="N",
            help="Play the matches in N local worker processes (a Dask cluster on this machine).",
        ),
    ] = None,
    cluster: Annotated[
        str | None,
        typer.Option(
            metavar="ADDRESS",
            help="Play the matches on the workers of the Dask scheduler at ADDRESS"
            " (tcp://host:8786).",
        ),
    ] = None,
    report: Annotated[
        bool,
        typer.Option(
            "--report",
            help="Keep the HTML report (RESULTS/report/index.html) fresh as matches finish.",
        ),
    ] = False,
) -> None:
    """Run a tournament (round robin, gauntlet, SPRT, Swiss or knockout), or resume it, and
    print the standings.

    \b
    Examples:
      referee tournament matches/demo.yaml
      referee tournament cup.yaml --restart --format markdown
      referee tournament cup.yaml --workers 2
      referee tournament cup.yaml --cluster tcp://10.0.0.5:8786
      referee tournament cup.yaml --report
    """
    from referee.cli import present
    from referee.cli.results import key_note
    from referee.cli.running import open_trace, run_interruptible
    from referee.cli.sandbox import prepare_sandbox
    from referee.records.files import check_writable_dir
    from referee.records.signing import results_key
    from referee.report.live import with_fresh_report
    from referee.report.site import REPORT_DIRECTORY, write_report
    from referee.tournaments.config import load_config
    from referee.tournaments.results import result_files
    from referee.tournaments.runner import run_tournament

    settings = load_config(config)
    venue = venue_of(workers, cluster, trace or settings.trace)
    check_writable_dir(settings.output, str(config), "output ")
    if restart and sys.stdin.isatty():
        doomed = len(result_files(settings))
        if doomed and not typer.confirm(
            f"delete the {doomed} transcripts in {settings.output}, their logs and the matches"
            " set aside, and start over?"
        ):
            raise typer.Exit(EXIT_FAILED)
    key, created = results_key(settings.output, signing_key)
    prepare_sandbox(entrant.spec for entrant in settings.players)
    bar = present.TournamentProgress(settings)
    with contextlib.ExitStack() as stack:
        tracer = open_trace(stack, trace or settings.trace)
        work = run_tournament(settings, key, bar, restart, tracer, venue)
        site = settings.output / REPORT_DIRECTORY
        try:
            run_interruptible(
                with_fresh_report(work, settings.output, site, key.public) if report else work,
                "interrupted; run the same command again to play the remaining matches",
                bar.close,
            )
        finally:
            bar.close()
            if report:  # what was played, interrupted or not
                written = write_report(settings.output, site, key.public)
                typer.echo(f"report: {written.index}", err=True)
    typer.echo(f"results: {settings.output}", err=True)
    typer.echo(key_note(key, created, settings.output), err=True)
    _print_standings(settings.output, fmt, as_json, key.public)


def venue_of(workers: int | None, cluster: str | None, trace: Path | None) -> "OpenVenue | None":
    """Where `--workers` or `--cluster` send the matches; None: this process."""
    if workers is None and cluster is None:
        return None
    if workers is not None and cluster is not None:
        raise RefereeError("give --workers or --cluster, not both")
    if trace is not None:
        raise RefereeError(
            "a trace follows players in this process; it cannot with --workers or --cluster"
        )
    # Only now: Dask takes a moment to import, which the other commands do not need.
    from referee.tournaments.cluster import Workers, on_cluster

    return on_cluster(Workers(workers or 0, cluster))


@user_errors
def standings(
    results: Annotated[
        Path, typer.Argument(metavar="DIRECTORY", help="A tournament's results directory.")
    ],
    fmt: FormatOption = Format.TABLE,
    as_json: JsonOption = False,
    key: KeyOption = None,
) -> None:
    """Compute standings from the transcripts in a results directory.

    \b
    Example:
      referee standings matches/results/demo --format csv
    """
    from referee.cli.results import results_directory

    results_directory(results)
    _print_standings(results, fmt, as_json, key)


@user_errors
def report_command(
    results: Annotated[
        Path, typer.Argument(metavar="DIRECTORY", help="A tournament's results directory.")
    ],
    out: Annotated[
        Path | None,
        typer.Option(
            metavar="DIRECTORY", help="Where to write the site (default: DIRECTORY/report)."
        ),
    ] = None,
    as_json: JsonOption = False,
    key: KeyOption = None,
) -> None:
    """Write a results directory as a static site: standings, matches, a page per match.

    Every transcript is verified first; one that fails is listed, not rendered (exit 1). The
    site needs no server and no network: open its index.html.

    \b
    Example:
      referee report matches/results/demo
    """
    from referee.cli import present
    from referee.cli.results import expected_key, results_directory
    from referee.cli.running import counting
    from referee.report.site import REPORT_DIRECTORY, write_report

    results_directory(results)
    target = out if out is not None else results / REPORT_DIRECTORY
    with counting("verify") as counted:
        site = write_report(results, target, expected_key(results, key), counted)
    if as_json:
        data = {"index": str(site.index), "listed": site.listed, "rendered": site.rendered}
        typer.echo(json.dumps(dict(data, failed=site.failed), indent=2))
    else:
        failed = (
            f", {site.failed} failed verification (listed, not rendered)" if site.failed else ""
        )
        listed = present.counted(site.listed, "match", "matches")
        typer.echo(f"{site.index}: {listed}, {site.rendered:,} rendered{failed}")
    if site.failed:
        raise typer.Exit(EXIT_FAILED)
