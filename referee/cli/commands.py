"""The commands: each parses its arguments, calls the library, prints, and sets the exit code."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import itertools
import json
import os
import random
import shlex
import signal
import sys
import tempfile
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import fields, replace
from enum import StrEnum
from importlib import metadata
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from typer._click.exceptions import NoArgsIsHelpError

from referee.arena.new_bot import new_bot
from referee.cli import arena, present
from referee.cli.failures import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_INTERRUPTED
from referee.cli.failures import say_error as _error
from referee.cli.failures import user_errors as _user_errors
from referee.cli.help import PlainCommand
from referee.cli.sandbox import prepare_sandbox
from referee.clock import Clocks, ggp_seconds
from referee.errors import ConfigError, ConformanceFileError, RefereeError, TranscriptError
from referee.games import GAMES, Game, StateLimits, get_game
from referee.games.playout import random_steps
from referee.gateway import Gateway
from referee.gateway import serve as serve_gateway
from referee.ggp.door import Door
from referee.ggp.messages import plain_name
from referee.match import MatchSetup, new_match_id, play_fresh
from referee.pauses import short_pauses
from referee.players.base import PlayerKind
from referee.players.builtin import make_player, parse_seats, program_spec
from referee.players.starter import SUFFIXES, Language, language_named
from referee.players.trace import Trace, trace_channel
from referee.policy import MAX_SEED, Policy
from referee.records.conformance import check_file
from referee.records.files import check_writable, check_writable_dir, write_atomic
from referee.records.ggp import from_ggp, to_ggp
from referee.records.replay import Outcome, verify_file, verify_paths
from referee.records.signing import (
    PUBLIC_FILE,
    SIGNATURE_FIELD,
    SigningKey,
    directory_key,
    pinned_key,
    results_key,
)
from referee.records.transcript import read_json, read_transcript, transcript_files
from referee.report.live import with_fresh_report
from referee.report.site import REPORT_DIRECTORY, write_report
from referee.sandbox.isolation import machine_protections
from referee.sandbox.limits import Limits
from referee.tournaments.config import load_config
from referee.tournaments.results import directory_standings, result_files
from referee.tournaments.runner import OpenVenue, run_tournament
from referee.tournaments.standings import Format, load_results, render
from referee.validate import Verdict, validate

# Plain help, as click formats it: option names and metavars in words, never Python types.
app = typer.Typer(rich_markup_mode=None)
app.add_typer(arena.app, name="arena")

F = TypeVar("F", bound=Callable[..., None])
T = TypeVar("T")

# The option of each limit: what its value is called, and what it limits.
_LIMIT_OPTIONS = {
    "memory_mb": ("MIB", "Memory of a player's processes together, MiB."),
    "cpu_s": ("SECONDS", "CPU seconds per match of a player."),
    "processes": ("N", "Processes and threads a player may have."),
    "open_files": ("N", "Open files per player process."),
    "file_size_mb": ("MIB", "Largest file a player may write, MiB."),
}
# The same for the limits of computing one state of a rulesheet played one state at a time.
_STATE_OPTIONS = {
    "memory_mb": ("MIB", "Memory for computing one state of a GDL game, MiB."),
    "seconds": ("SECONDS", "Time for computing one state of a GDL game."),
}


def _options_of(
    record: type[Any], parameter: str, prefix: str, table: dict[str, tuple[str, str]]
) -> Callable[[F], F]:
    """Give a command an option per field of the dataclass `record` (named `prefix` and the
    field), handed to it as one `parameter: record`."""

    def decorate(command: F) -> F:
        default = record()
        signature = inspect.signature(command, eval_str=True)
        options = [
            inspect.Parameter(
                prefix + item.name,
                inspect.Parameter.KEYWORD_ONLY,
                default=getattr(default, item.name),
                annotation=Annotated[
                    type(getattr(default, item.name)),
                    typer.Option(
                        # Whole units, or for seconds any positive time.
                        min=1 if isinstance(getattr(default, item.name), int) else 0.001,
                        metavar=table[item.name][0],
                        help=table[item.name][1],
                    ),
                ],
            )
            for item in fields(record)
        ]
        kept = [p for p in signature.parameters.values() if p.name != parameter]

        @functools.wraps(command)
        def run(*args: object, **kwargs: Any) -> None:
            values = {item.name: kwargs.pop(prefix + item.name) for item in fields(record)}
            command(*args, **{parameter: record(**values)}, **kwargs)

        run.__signature__ = signature.replace(parameters=[*kept, *options])  # type: ignore[attr-defined]
        return run  # type: ignore[return-value]

    return decorate


# Every limit of a player, handed to the command as one `limits: Limits`.
_limit_options = _options_of(Limits, "limits", "", _LIMIT_OPTIONS)
# The limits of a GDL game's states, handed to the command as one `states: StateLimits`.
_state_options = _options_of(StateLimits, "states", "state_", _STATE_OPTIONS)


def _print_version(requested: bool) -> None:
    if requested:
        # The version pyproject.toml gives, as installed: said there only.
        typer.echo(f"referee {metadata.version('referee')}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version", "-V", callback=_print_version, is_eager=True, help="Print the version."
        ),
    ] = False,
) -> None:
    """Referee and match runner for game-playing bots.

    \b
    Start here:
      referee games                          the games and their roles
      referee rules ticblock                 how a game is played
      referee new-bot python my-bot          a starter bot to make your own
      referee validate 'python3 bot.py'      is my bot fit for a tournament?
      referee play ticblock -p xcplayer='python3 bot.py' -p obplayer=random
      referee tournament matches/demo.yaml   a round-robin, with standings
    """


JsonOption = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
GameArgument = Annotated[
    str,
    typer.Argument(
        metavar="GAME",
        help=f"The game: {', '.join(GAMES)}, or the path of a GDL rulesheet (.kif).",
        show_default=False,
    ),
]
ShowOption = Annotated[bool, typer.Option("--show", help="Print the board after every step.")]
FormatOption = Annotated[
    Format,
    typer.Option(
        "--format", metavar="|".join(Format), help="How to print the standings.", show_choices=False
    ),
]
StartClockOption = Annotated[int, typer.Option(metavar="MS", help="Time to answer ready, ms.")]
PlayClockOption = Annotated[int, typer.Option(metavar="MS", help="Time for each move, ms.")]
TraceOption = Annotated[
    Path | None,
    typer.Option(
        metavar="FILE",
        help="Write every line exchanged with the players to FILE: time, match, role, direction.",
    ),
]
# Where a match's transcript goes when no --out says otherwise: RESULTS_DIR/ID.json.
RESULTS_DIR = Path("matches") / "results"
TranscriptOutOption = Annotated[
    Path | None,
    typer.Option(metavar="FILE", help="Transcript file (default: matches/results/ID.json)."),
]
SigningKeyOption = Annotated[
    Path | None,
    typer.Option(
        metavar="FILE",
        help="Private key that signs the transcripts (default: signing.key beside them).",
    ),
]
KeyOption = Annotated[
    str | None,
    typer.Option(
        "--key",
        metavar="KEY",
        help="Public key the transcripts must be signed with: ed25519:BASE64, or a signing.pub"
        " (default: the results directory's signing.pub, if it has one).",
    ),
]


def _run(work: Coroutine[Any, Any, T], interrupted: str, stop_progress: Callable[[], None]) -> T:
    """Run `work` to its end; Ctrl-C or SIGTERM cancel it (players ended, records written),
    then the progress is stopped, `interrupted` is said, and the exit code is 130."""
    try:
        with short_pauses():
            return asyncio.run(_stopped_by_sigterm(work))
    except (KeyboardInterrupt, asyncio.CancelledError):
        stop_progress()
        _error(interrupted)
        raise typer.Exit(EXIT_INTERRUPTED) from None


async def _stopped_by_sigterm(work: Coroutine[Any, Any, T]) -> T:
    """Run `work`; SIGTERM cancels it as Ctrl-C does."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    loop.add_signal_handler(signal.SIGTERM, task.cancel)
    try:
        return await work
    finally:
        loop.remove_signal_handler(signal.SIGTERM)


@contextlib.contextmanager
def _counting(what: str) -> Iterator[Callable[[int, int], None]]:
    """A progress bar of `what` on standard error, gone when done, and what moves it:
    a call with how many are done of how many."""
    progress = present.progress_bar(transient=True)
    task = progress.add_task(what, total=None)
    with progress:
        yield lambda done, total: progress.update(task, completed=done, total=total)


def _open_trace(stack: contextlib.ExitStack, path: Path | None) -> Trace | None:
    """The trace file `--trace` asks for, closed with `stack`; None without one."""
    if path is None:
        return None
    check_writable(path, "a trace file")
    try:
        trace = Trace(path)
    except OSError as error:
        raise ConfigError(f"--trace {path}: cannot write: {error.strerror}") from None
    stack.callback(trace.close)
    return trace


def _fresh_seed(seed: int | None) -> int:
    return random.SystemRandom().randrange(2**31) if seed is None else seed


@app.command(cls=PlainCommand)
def games(as_json: JsonOption = False) -> None:
    """List the games: id, roles and a one-line description.

    \b
    Examples:
      referee games
      referee games --json
    """
    if as_json:
        rows = [
            {"id": g.id, "roles": list(g.roles), "description": g.description}
            for g in GAMES.values()
        ]
        typer.echo(json.dumps(rows, indent=2))
        return
    table = [(g.id, ", ".join(g.roles), g.description) for g in GAMES.values()]
    typer.echo(present.table_text(["game", "roles", "description"], table))


@app.command(cls=PlainCommand)
@_user_errors
def rules(game: GameArgument) -> None:
    """Explain a game's rules in plain words, with the move syntax and an example move.

    \b
    Example:
      referee rules ticblock
    """
    found = get_game(game)
    typer.echo(f"{found.id}: {found.description}")
    typer.echo(f"Roles, in order: {', '.join(found.roles)}\n")
    typer.echo(found.rules)
    typer.echo(f"\nExample move: {found.example_move}\n\nInitial position:")
    typer.echo(found.render(found.initial_state()))


@app.command("random", cls=PlainCommand)
@_user_errors
def random_game(
    game: GameArgument,
    seed: Annotated[
        int | None,
        typer.Option(
            min=0,
            max=MAX_SEED,
            metavar="N",
            help="Seed of the random movers (default: a fresh one).",
        ),
    ] = None,
    show: ShowOption = False,
) -> None:
    """Play one game between random movers and print every joint move and the goals.

    \b
    Example:
      referee random hex-pie --seed 7 --show
    """
    found = get_game(game)
    seed = _fresh_seed(seed)
    typer.echo(f"{found.id}, seed {seed}")
    print_step = present.step_printer(found, show)
    state = found.initial_state()
    steps = 0
    for steps, (joint, state) in enumerate(random_steps(found, random.Random(seed)), start=1):
        print_step(steps, joint, state)
    goals = ", ".join(
        f"{role} {goal}" for role, goal in zip(found.roles, found.goals(state), strict=True)
    )
    typer.echo(f"goals: {goals} (after {present.counted(steps, 'step')})")


@app.command(cls=PlainCommand)
def conformance(
    files: Annotated[
        list[Path],
        typer.Argument(metavar="FILE", help="Reference files, one JSON game per line."),
    ],
    game: Annotated[
        str | None,
        typer.Option(
            metavar="GAME",
            help="Check under these rules (a game id or a .kif file), not each line's game.",
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Replay reference games; check every legal-move set, the end and the goals.

    A line's game is a built-in game, or a rulesheet: `<game>.kif` beside the file or in a
    gdl/ folder of a folder above it.

    \b
    Examples:
      referee conformance tests/conformance/*.jsonl
      referee conformance --game referee/games/rulesheets/ticblock.kif \
        tests/conformance/ticblock.jsonl
    """
    reports = []
    errors = 0
    rules = get_game(game) if game is not None else None
    for path in files:
        try:
            report = check_file(path, rules)
        except ConformanceFileError as error:
            _error(str(error))
            errors += 1
            continue
        reports.append(report)
        if not as_json:
            for mismatch in report.mismatches:
                typer.echo(str(mismatch))
            typer.echo(report.summary())
    if as_json:
        typer.echo(json.dumps([report.as_dict() for report in reports], indent=2))
    if errors:
        raise typer.Exit(EXIT_BAD_INPUT)
    if any(report.mismatches for report in reports):
        raise typer.Exit(EXIT_FAILED)


@app.command(cls=PlainCommand)
@_user_errors
@_limit_options
@_state_options
def play(
    game: GameArgument,
    player: Annotated[
        list[str],
        typer.Option(
            "--player",
            "-p",
            metavar="ROLE=PLAYER",
            help="Who plays ROLE, once per role: a command (quoted if it has spaces), or"
            " random, mcts or human.",
        ),
    ],
    start_clock: StartClockOption = 10_000,
    play_clock: PlayClockOption = 1_000,
    time_bank: Annotated[
        int, typer.Option(metavar="MS", help="Extra ms per player for the whole match.")
    ] = 0,
    policy: Annotated[
        Policy,
        typer.Option(
            metavar="|".join(Policy),
            show_choices=False,
            help="What a fault costs: the match, or the move (a random one is played).",
        ),
    ] = Policy.FORFEIT,
    seed: Annotated[
        int | None,
        typer.Option(
            min=0, max=MAX_SEED, metavar="N", help="Seed for fault replacements (default: fresh)."
        ),
    ] = None,
    ponder: Annotated[
        bool,
        typer.Option(
            help="Let a player think while it is not asked (by default it is paused from its"
            " answer to its next request, so that it cannot take the other's CPU time)."
        ),
    ] = False,
    out: TranscriptOutOption = None,
    show: ShowOption = False,
    signing_key: SigningKeyOption = None,
    trace: TraceOption = None,
    *,
    limits: Limits,
    states: StateLimits,
) -> None:
    """Play one match between player programs and write its transcript, signed.

    \b
    Examples:
      referee play ticblock -p xcplayer='python3 bot.py' -p obplayer=random --show
      referee play hex-pie -p player1=human -p player2=mcts
      referee play quad -p x='./mybot' -p o=random --trace trace.log
      referee play games/ticTacToe.kif -p xplayer=mcts -p oplayer=random
    """
    found = get_game(game, states)
    seats = [replace(spec, limits=limits) for spec in parse_seats(found, player)]
    clocks = Clocks(start_clock, play_clock, time_bank)
    if any(spec.kind is PlayerKind.HTTP for spec in seats):
        ggp_seconds(clocks)
    seed = _fresh_seed(seed)
    match_id = new_match_id(found.id)
    out = out or RESULTS_DIR / f"{match_id}.json"
    check_writable(out)
    key, created = results_key(out.parent, signing_key)
    with contextlib.ExitStack() as stack:
        tracer = _open_trace(stack, trace)
        typer.echo(
            f"{match_id}: {found.id}, "
            + ", ".join(f"{r} {s.name}" for r, s in zip(found.roles, seats, strict=True))
        )
        players = [
            make_player(
                spec,
                out.with_name(f"{out.stem}.{role}.log"),
                show=typer.echo,
                trace=trace_channel(tracer, spec.name),
            )
            for role, spec in zip(found.roles, seats, strict=True)
        ]
        on_step = present.step_printer(found, show)
        prepare_sandbox(seats)
        setup = MatchSetup(match_id, found, players, clocks, policy, seed, ponder=ponder)
        transcript = _run(
            play_fresh(setup, out, key, on_step),
            f"interrupted; the match is recorded as aborted in {out}",
            stop_progress=lambda: None,  # a match prints its steps, not a bar
        )
    for fault in transcript.faults:
        typer.echo(present.fault_line(fault))
    typer.echo(present.result_line(transcript))
    typer.echo(f"transcript: {out}")
    typer.echo(_key_note(key, created, out.parent))
    # A program that never got ready (it died, was silent, or said something else): the
    # reason in one line, not only in its log. The match is recorded all the same: its
    # forfeit is a result.
    unready = [fault for fault in transcript.faults if fault.step == 0]
    for fault in unready:
        role = found.role_index(fault.role)
        _error(present.unready_line(fault, players[role], transcript.seats[role].log))
    if unready:
        raise typer.Exit(EXIT_FAILED)
    if transcript.rules_fault is not None:
        _error(present.rules_fault_line(transcript.rules_fault))
        raise typer.Exit(EXIT_BAD_INPUT)


def _key_note(key: SigningKey, created: bool, directory: Path) -> str:
    """What to tell about the key that signed a directory's transcripts."""
    made = f"made {key.path} (keep it private)" if created else str(key.path)
    return f"signing key: {made}; public key {key.public} in {directory / PUBLIC_FILE}"


def _expected_key(directory: Path, pinned: str | None) -> str | None:
    """The key transcripts must be signed with: the one pinned, else the directory's own."""
    return pinned_key(pinned) if pinned is not None else directory_key(directory)


def _results_directory(results: Path) -> None:
    """A results directory a person named must be one and hold transcripts: an empty table or
    report of a mistyped one would look like a tournament of no matches."""
    if not results.is_dir():
        raise RefereeError(f"{results}: no such results directory")
    if not transcript_files(results):
        raise RefereeError(f"{results}: no transcripts in it (a *.json file for each match)")


def _print_standings(results: Path, fmt: Format, as_json: bool, pinned: str | None) -> None:
    """Compute standings from a results directory and print them; exit 1 if a file was bad.

    The directory's tournament info, when there is one, says how many matches were
    scheduled, how ratings are anchored, and what the SPRT tests.
    """
    if not results.is_dir():
        raise RefereeError(f"{results}: no such results directory")
    transcripts, problems = load_results(results, _expected_key(results, pinned))
    for problem in problems:
        _error(f"left out of the standings: {problem}")
    standings = directory_standings(results, transcripts)
    typer.echo(render(standings, Format.JSON if as_json else fmt))
    if problems:
        raise typer.Exit(EXIT_FAILED)


@app.command(cls=PlainCommand)
@_user_errors
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
    """Run a tournament (round robin, gauntlet or SPRT), or resume it, and print the standings.

    \b
    Examples:
      referee tournament matches/demo.yaml
      referee tournament cup.yaml --restart --format markdown
      referee tournament cup.yaml --workers 2
      referee tournament cup.yaml --cluster tcp://10.0.0.5:8786
      referee tournament cup.yaml --report
    """
    settings = load_config(config)
    venue = _venue(workers, cluster, trace or settings.trace)
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
        tracer = _open_trace(stack, trace or settings.trace)
        work = run_tournament(settings, key, bar, restart, tracer, venue)
        site = settings.output / REPORT_DIRECTORY
        try:
            _run(
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
    typer.echo(_key_note(key, created, settings.output), err=True)
    _print_standings(settings.output, fmt, as_json, key.public)


def _venue(workers: int | None, cluster: str | None, trace: Path | None) -> OpenVenue | None:
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


@app.command(cls=PlainCommand)
@_user_errors
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
    _results_directory(results)
    _print_standings(results, fmt, as_json, key)


def _select_games(text: str, states: StateLimits) -> list[Game]:
    """`all`, or game ids separated by commas."""
    if text.strip() == "all":
        return list(GAMES.values())
    selected = [get_game(game_id.strip(), states) for game_id in text.split(",") if game_id.strip()]
    if not selected:
        raise RefereeError("--games: name at least one game, or all")
    return selected


@app.command("validate", cls=PlainCommand)
@_user_errors
@_limit_options
@_state_options
def validate_command(
    command: Annotated[
        str,
        typer.Argument(
            metavar="COMMAND",
            help="The program, quoted if it has spaces: 'python3 bot.py'; or random or mcts.",
        ),
    ],
    games: Annotated[
        str, typer.Option(metavar="GAMES", help="all, or game ids separated by commas.")
    ] = "all",
    matches_per_role: Annotated[
        int, typer.Option(min=1, metavar="N", help="Matches in one process per game and role.")
    ] = 2,
    start_clock: StartClockOption = 10_000,
    play_clock: PlayClockOption = 1_000,
    as_json: JsonOption = False,
    keep: Annotated[
        Path | None,
        typer.Option(metavar="DIRECTORY", help="Keep the transcripts and logs in this directory."),
    ] = None,
    thorough: Annotated[
        bool,
        typer.Option(
            "--thorough", help="Play every match, even once the verdict is certain to be FAIL."
        ),
    ] = False,
    trace: TraceOption = None,
    *,
    limits: Limits,
    states: StateLimits,
) -> None:
    """Check that a player program is fit for a tournament: play it against random and judge.

    \b
    Examples:
      referee validate 'python3 bot.py'
      referee validate './bot' --games ticblock,quad --trace t.log
    """
    selected = _select_games(games, states)
    spec = program_spec(command, "validate checks a program; a person cannot be validated")
    spec = replace(spec, name="submitted", limits=limits)
    clocks = Clocks(start_clock, play_clock)
    if spec.kind is PlayerKind.HTTP:
        ggp_seconds(clocks)
    if keep is not None:
        check_writable_dir(keep, "--keep")
    prepare_sandbox([spec])
    with contextlib.ExitStack() as stack:
        tracer = _open_trace(stack, trace)
        workdir = keep or Path(
            stack.enter_context(tempfile.TemporaryDirectory(prefix="referee-validate-"))
        )
        progress = present.progress_bar(transient=True)
        task = progress.add_task("validate", total=None)

        def advance(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        with progress:
            report = _run(
                validate(
                    spec, selected, matches_per_role, clocks, workdir, advance, thorough, tracer
                ),
                "interrupted; nothing was judged",
                progress.stop,
            )
    if as_json:
        typer.echo(json.dumps(report.to_json(), indent=2))
    else:
        typer.echo(present.validation_report(report, keep))
    if report.verdict is Verdict.FAIL:
        raise typer.Exit(EXIT_FAILED)


@app.command("new-bot", cls=PlainCommand)
@_user_errors
def new_bot_command(
    language: Annotated[
        str,
        typer.Argument(
            metavar="LANGUAGE",
            help=f"{', '.join(Language)}, or the suffix of its source ({', '.join(SUFFIXES)}).",
            show_default=False,
        ),
    ],
    directory: Annotated[
        Path, typer.Argument(metavar="DIR", help="A new or empty directory for the bot.")
    ],
) -> None:
    """Write a starter bot into DIR: a random player, its bot.yaml for an arena, and a
    .gitignore of what its build makes, where it is built.

    Then it prints the commands that build it, if it needs building, and validate it, to run
    from here as they are printed. Edit the source to make it play well.

    \b
    Examples:
      referee new-bot python my-bot
      referee new-bot c my-bot
    """
    typer.echo(present.new_bot_lines(new_bot(language_named(language), directory)))


@app.command("report", cls=PlainCommand)
@_user_errors
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
    _results_directory(results)
    target = out if out is not None else results / REPORT_DIRECTORY
    with _counting("verify") as counted:
        site = write_report(results, target, _expected_key(results, key), counted)
    if as_json:
        data = {"index": str(site.index), "listed": site.listed, "rendered": site.rendered}
        typer.echo(json.dumps(dict(data, failed=site.failed), indent=2))
    else:
        failed = (
            f", {site.failed} failed verification (listed, not rendered)" if site.failed else ""
        )
        listed = present.counted(site.listed, "match", "matches")
        typer.echo(f"{site.index}: {listed}, {site.rendered} rendered{failed}")
    if site.failed:
        raise typer.Exit(EXIT_FAILED)


@app.command("replay", cls=PlainCommand)
@_user_errors
def replay_command(
    path: Annotated[
        Path,
        typer.Argument(metavar="PATH", help="A transcript, or a results directory to verify."),
    ],
    verify: Annotated[
        bool, typer.Option("--verify", help="Check the transcript against the rules; no boards.")
    ] = False,
    step: Annotated[
        int | None,
        typer.Option(min=0, metavar="N", help="Show only the board after step N (0: the start)."),
    ] = None,
    watch: Annotated[
        bool, typer.Option("--watch", help="Play the match back in the terminal, step by step.")
    ] = False,
    delay: Annotated[
        float, typer.Option(min=0, metavar="SECONDS", help="Seconds between steps with --watch.")
    ] = 1.0,
    as_json: JsonOption = False,
    key: KeyOption = None,
) -> None:
    """Replay a match with the rules: show its boards, or verify it (a directory: every one).

    \b
    Examples:
      referee replay matches/results/demo/MATCH.json --watch
      referee replay matches/results/demo
    """
    if path.is_dir():
        if step is not None or watch:
            raise RefereeError(f"{path}: --step and --watch show one transcript, not a directory")
        paths = transcript_files(path)
        if not paths:
            raise RefereeError(f"{path}: no transcripts (*.json) in this directory")
        with _counting("verify") as counted:
            report = verify_paths(path, paths, _expected_key(path, key), counted)
        text = (
            json.dumps(report.to_json(), indent=2) if as_json else present.directory_report(report)
        )
        typer.echo(text)
        if report.failed:
            raise typer.Exit(EXIT_FAILED)
        return
    if not path.exists():
        raise RefereeError(f"{path}: no such transcript or directory")
    if step is not None and verify:
        raise RefereeError("--step shows one board; --verify checks the whole match, no boards")
    if step is not None:
        # Told from the record, before a replay that can take long.
        try:
            last = read_transcript(path).last_step
        except TranscriptError:
            last = None  # the verdict says why
        if last is not None and step > last:
            raise RefereeError(f"--step {step}: the match ends at step {last}")
    verdict = verify_file(path, _expected_key(path.parent, key))
    # Bad input: not a transcript at all (one of another schema version is one, unchecked).
    unreadable = verdict.outcome is Outcome.UNREADABLE
    if unreadable and not as_json:
        raise RefereeError(verdict.problem or f"{path}: not a transcript")
    replayed = verdict.replayed
    if as_json:
        data = verdict.to_json()
        if not verify and replayed is not None and replayed.game is not None:
            data["frames"] = [
                frame.to_json(replayed.game)
                for frame in replayed.frames
                if step is None or frame.step == step
            ]
        typer.echo(json.dumps(data, indent=2))
    elif verify or replayed is None or replayed.game is None:
        typer.echo(present.verdict_lines(verdict))
    else:
        frames = replayed.frames
        if step is not None:
            frames = [frame for frame in frames if frame.step == step]
        try:
            present.show_replay(replayed, frames, watch, delay)
        except KeyboardInterrupt:
            raise typer.Exit(EXIT_INTERRUPTED) from None
        if verdict.outcome is not Outcome.VERIFIED:
            typer.echo(present.verdict_line(verdict))
    if unreadable:
        raise typer.Exit(EXIT_BAD_INPUT)
    if verdict.outcome is not Outcome.VERIFIED:
        raise typer.Exit(EXIT_FAILED)


class ExportFormat(StrEnum):
    """Layouts a transcript can be exported in."""

    GGP = "ggp"


RecordFormatOption = Annotated[
    ExportFormat,
    typer.Option(
        "--format",
        metavar="|".join(ExportFormat),
        show_choices=False,
        help="ggp: the match JSON of the GGP managers.",
    ),
]


@app.command(cls=PlainCommand)
@_user_errors
def export(
    transcript: Annotated[Path, typer.Argument(metavar="FILE", help="A transcript file.")],
    fmt: RecordFormatOption = ExportFormat.GGP,
    out: Annotated[
        Path | None, typer.Option(metavar="FILE", help="Write here instead of stdout.")
    ] = None,
) -> None:
    """Export a verified transcript for other tools.

    \b
    Example:
      referee export MATCH.json --out MATCH.ggp.json
    """
    if not transcript.is_file():
        raise RefereeError(f"{transcript}: no such transcript file")
    verdict = verify_file(transcript, _expected_key(transcript.parent, None))
    if verdict.outcome is not Outcome.VERIFIED or verdict.replayed is None:
        typer.echo(present.verdict_line(verdict), err=True)
        raise typer.Exit(EXIT_FAILED)
    replayed = verdict.replayed
    assert replayed.game is not None  # a verified transcript's game was found
    signed = json.loads(transcript.read_text(encoding="utf-8"))
    text = json.dumps(to_ggp(replayed.transcript, replayed.game, signed), indent=2) + "\n"
    if out is None:
        typer.echo(text, nl=False)
    else:
        check_writable(out)
        write_atomic(out, text)


@app.command("import", cls=PlainCommand)
@_user_errors
@_state_options
def import_command(
    match: Annotated[Path, typer.Argument(metavar="FILE", help="A GGP match JSON file.")],
    fmt: RecordFormatOption = ExportFormat.GGP,
    rules: Annotated[
        Path | None,
        typer.Option(metavar="KIF", help="The game's rules, for a match that names them by URL."),
    ] = None,
    out: TranscriptOutOption = None,
    signing_key: SigningKeyOption = None,
    *,
    states: StateLimits,
) -> None:
    """Import a match another tool recorded, as a transcript that replay --verify checks.

    Our own export comes back as the transcript it was, signature and all; another
    manager's match is signed with the key of the transcript's directory. The states of an
    aborted match are computed, to record where the rules failed it, if they did.

    \b
    Example:
      referee import tiltyard-match.json --out imported.json
      referee replay --verify imported.json
    """
    data = read_json(match)
    record = from_ggp(data, str(match), rules, states)
    # The match id is the other tool's: made plain, it names a file in the results only.
    out = out or RESULTS_DIR / f"{plain_name(record['match_id'])}.json"
    check_writable(out)
    if record.get(SIGNATURE_FIELD) is None:
        key, _ = results_key(out.parent, signing_key)
        record[SIGNATURE_FIELD] = key.sign(record)
    write_atomic(out, json.dumps(record, indent=2) + "\n")
    typer.echo(f"transcript: {out}")


@app.command(cls=PlainCommand)
@_user_errors
@_limit_options
@_state_options
def serve(
    command: Annotated[
        str,
        typer.Argument(
            metavar="COMMAND",
            help="The program, quoted if it has spaces: 'python3 bot.py'; or random or mcts.",
        ),
    ],
    port: Annotated[int, typer.Option(min=0, max=65535, metavar="N", help="Port to listen on.")],
    host: Annotated[
        str,
        typer.Option(metavar="HOST", help="Address to listen on; 0.0.0.0 for every network."),
    ] = "127.0.0.1",
    name: Annotated[
        str | None, typer.Option(metavar="NAME", help="The player's name (default: the command's).")
    ] = None,
    logs: Annotated[
        Path,
        typer.Option(metavar="DIRECTORY", help="Where each match's log of the program goes."),
    ] = RESULTS_DIR / "serve",
    allow: Annotated[
        list[str] | None,
        typer.Option(
            "--allow",
            metavar="ADDRESS",
            help="Only this address or network (CIDR) may connect: the game manager's."
            " Repeatable. Without it, anyone who can reach the port can start a match.",
        ),
    ] = None,
    trace: TraceOption = None,
    *,
    limits: Limits,
    states: StateLimits,
) -> None:
    """Enter a line-protocol program in GGP competitions: answer a GGP game manager over HTTP.

    Each START starts the program afresh; one match at a time, a second START is told busy.
    Ctrl-C stops.

    \b
    Examples:
      referee serve ./my-bot/bot --port 9147
      referee serve 'python3 bot.py' --port 9147 --host 0.0.0.0 --allow 10.1.2.3 --name mybot
    """
    door = Door.allowing(allow or ())
    spec = program_spec(command, "serve runs a program; a person cannot be served")
    if spec.kind is PlayerKind.HTTP:
        raise ConfigError(f"serve runs a program; {spec.url} is a GGP player already")
    spec = replace(spec, limits=limits)
    player_name = name or Path(spec.argv[-1]).stem
    check_writable_dir(logs, "--logs")
    prepare_sandbox([spec])
    with contextlib.ExitStack() as stack:
        tracer = _open_trace(stack, trace)
        channel = trace_channel(tracer, player_name)
        gateway = Gateway(spec, player_name, logs, typer.echo, channel, states, door)
        with short_pauses():
            asyncio.run(_serve(gateway, host, port))
    typer.echo(f"{player_name}: stopped", err=True)


async def _serve(gateway: Gateway, host: str, port: int) -> None:
    """Answer the game manager until Ctrl-C or SIGTERM, the way serving is meant to end (no
    error): a match under way ends with its program. The loop's end takes the handlers away."""
    stop = asyncio.Event()
    for number in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(number, stop.set)
    try:
        server = await serve_gateway(gateway, host, port)
    except OSError as error:
        reason = os.strerror(error.errno) if error.errno else str(error)
        raise ConfigError(f"cannot listen on {host}:{port}: {reason}") from None
    bound = server.sockets[0].getsockname()[1]
    typer.echo(f"{gateway.name}: a GGP player at http://{host}:{bound} (Ctrl-C stops)")
    if not gateway.door.allowed:
        typer.echo(
            f"referee: warning: anyone who can reach {host}:{bound} can start a match;"
            " --allow ADDRESS lets only the game manager in",
            err=True,
        )
    try:
        await stop.wait()
    finally:
        server.close()
        await gateway.close()


@app.command(cls=PlainCommand)
def doctor(as_json: JsonOption = False) -> None:
    """Say which protections against misbehaving players this machine gives.

    \b
    Example:
      referee doctor
    """
    protections = machine_protections()
    if as_json:
        typer.echo(json.dumps(protections.to_json(), indent=2))
        return
    table = [(name, "yes" if active else "NO", how) for name, active, how in protections.rows()]
    typer.echo(present.table_text(["protection", "active", "how"], table))


def _quoting_hint(args: list[str]) -> str:
    """For arguments the shell split: how to quote a player command that has spaces."""
    for index, word in enumerate(args):
        if word.startswith("--player="):
            option, value = "--player", word.removeprefix("--player=")
        elif word in ("--player", "-p") and index + 1 < len(args):
            option, value = word, args[index + 1]
            index += 1
        elif word == "validate" and index + 1 < len(args):
            option, value = "validate", args[index + 1]
            index += 1
        else:
            continue
        rest = list(itertools.takewhile(lambda w: not w.startswith("-"), args[index + 1 :]))
        if any("=" in word for word in rest):
            return "each role needs a --player of its own: --player ROLE=PLAYER --player ..."
        if rest:
            whole = shlex.quote(" ".join([value, *rest]))
            return f"a command with spaces must be quoted: {option} {whole}"
    return ""


def main(args: list[str] | None = None) -> None:
    """Entry point of the `referee` console script: a usage error is one line, exit 2."""
    args = sys.argv[1:] if args is None else args
    try:
        code = app(args or ["--help"], prog_name="referee", standalone_mode=False)
    except NoArgsIsHelpError as error:
        # `referee arena` alone, as `referee` alone: its help, which is no error.
        typer.echo(error.ctx.get_help() if error.ctx is not None else error.format_message())
        code = 0
    except typer.TyperException as error:
        # Typer's own usage errors carry the command they were found in (`ctx`).
        context = getattr(error, "ctx", None)
        command = context.command_path if context is not None else "referee"
        message = error.format_message()
        hint = _quoting_hint(args) if "unexpected extra argument" in message else ""
        _error(f"{command}: {message} ({hint or f'see {command} --help'})")
        code = error.exit_code
    except typer.Abort:
        _error("interrupted")
        code = EXIT_INTERRUPTED
    sys.exit(code or 0)
