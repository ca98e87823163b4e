"""The command line: parses arguments, calls the library, prints, and sets the exit code."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import random
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine, Hashable
from dataclasses import asdict, replace
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeRemainingColumn,
)
from tabulate import tabulate

from referee import __version__
from referee.clock import Clocks
from referee.errors import ConformanceFileError, RefereeError
from referee.games import GAMES, Game, JointMove, get_game
from referee.games.playout import random_steps
from referee.match import MatchSetup, Policy, StepCallback, new_match_id, play_fresh
from referee.players.builtin import HUMAN, make_player, parse_seats, player_spec
from referee.records.conformance import check_file
from referee.records.ggp import to_ggp
from referee.records.replay import (
    FileVerdict,
    Frame,
    Outcome,
    Replay,
    summary,
    verify_file,
    verify_files,
)
from referee.records.transcript import (
    Fault,
    Transcript,
    check_writable,
    check_writable_dir,
    transcript_files,
    write_atomic,
)
from referee.sandbox.limits import Limits, Protections, machine_protections, remove_left_behind
from referee.tournaments.config import load_config
from referee.tournaments.runner import Observer, run_tournament
from referee.tournaments.schedule import ScheduledMatch
from referee.tournaments.standings import Format, compute, load_results, render
from referee.validate import Verdict, validate

app = typer.Typer(
    add_completion=False,
    help="Referee and match runner for game-playing bots.",
)

F = TypeVar("F", bound=Callable[..., None])
T = TypeVar("T")

# Exit codes: 0 success, 1 a check failed (mismatch), 2 bad input.
EXIT_FAILED, EXIT_BAD_INPUT = 1, 2


def _user_errors(command: F) -> F:
    """Report a RefereeError as one line on standard error with exit code 2, not a traceback."""

    @functools.wraps(command)
    def run(*args: object, **kwargs: object) -> None:
        try:
            command(*args, **kwargs)
        except RefereeError as error:
            _error(str(error))
            raise typer.Exit(EXIT_BAD_INPUT) from None

    return run  # type: ignore[return-value]


def _error(message: str) -> None:
    typer.echo(f"referee: error: {message}", err=True)


def _print_version(requested: bool) -> None:
    if requested:
        typer.echo(f"referee {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version."
        ),
    ] = False,
) -> None:
    """Referee and match runner for game-playing bots."""


JsonOption = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
GameArgument = Annotated[str, typer.Argument(help="Game id, see `referee games`.")]
ShowOption = Annotated[bool, typer.Option("--show", help="Print the board after every step.")]
_DEFAULT = Limits()
MemoryOption = Annotated[
    int, typer.Option(min=1, help="Memory of a player's processes together, MiB.")
]
CpuOption = Annotated[int, typer.Option(min=1, help="CPU seconds per match of a player.")]
ProcessesOption = Annotated[
    int, typer.Option(min=1, help="Processes and threads a player may have.")
]
OpenFilesOption = Annotated[int, typer.Option(min=1, help="Open files per player process.")]
FileSizeOption = Annotated[int, typer.Option(min=1, help="Largest file a player may write, MiB.")]


def _prepare_sandbox() -> None:
    """Before any player starts: clean up after killed referees; say what cannot be protected."""
    remove_left_behind()
    for reason in machine_protections().why_not:
        typer.echo(f"referee: warning: {reason}", err=True)


def _fresh_seed(seed: int | None) -> int:
    return random.SystemRandom().randrange(2**31) if seed is None else seed


def _step_line(step: int, moves: dict[str, str], times_ms: dict[str, float] | None = None) -> str:
    """`step 3: xcplayer (mark 2 2) 812 ms, obplayer noop`: a joint move and response times."""
    times_ms = times_ms or {}
    return f"step {step}: " + ", ".join(
        f"{role} {move}" + (f" {times_ms[role]:.1f} ms" if role in times_ms else "")
        for role, move in moves.items()
    )


def _fault_line(fault: Fault) -> str:
    replaced = f"; played {fault.replacement} instead" if fault.replacement else ""
    return f"fault at step {fault.step}: {fault.role} {fault.kind}: {fault.detail}{replaced}"


def _result_line(transcript: Transcript) -> str:
    steps = len(transcript.steps)
    if transcript.goals is None:
        return f"result: none ({transcript.end_reason} after {steps} steps)"
    goals = ", ".join(f"{role} {goal}" for role, goal in transcript.goals.items())
    return f"result: {goals} ({transcript.end_reason} after {steps} steps)"


def _step_printer(game: Game, show: bool) -> StepCallback:
    """Print the start position (with --show), then a callback that prints each step."""
    if show:
        typer.echo(game.render(game.initial_state()) + "\n")

    def print_step(step: int, joint: JointMove, state: Hashable) -> None:
        typer.echo(_step_line(step, dict(zip(game.roles, joint, strict=True))))
        if show:
            typer.echo(game.render(state) + "\n")

    return print_step


@app.command()
def games(as_json: JsonOption = False) -> None:
    """List the games: id, roles and a one-line description."""
    if as_json:
        rows = [
            {"id": g.id, "roles": list(g.roles), "description": g.description}
            for g in GAMES.values()
        ]
        typer.echo(json.dumps(rows, indent=2))
        return
    table = [(g.id, ", ".join(g.roles), g.description) for g in GAMES.values()]
    typer.echo(tabulate(table, headers=["game", "roles", "description"]))


@app.command()
@_user_errors
def rules(game: GameArgument) -> None:
    """Explain a game's rules in plain words, with the move syntax and an example move."""
    found = get_game(game)
    typer.echo(f"{found.id}: {found.description}")
    typer.echo(f"Roles, in order: {', '.join(found.roles)}\n")
    typer.echo(found.rules)
    typer.echo(f"\nExample move: {found.example_move}\n\nInitial position:")
    typer.echo(found.render(found.initial_state()))


@app.command("random")
@_user_errors
def random_game(
    game: GameArgument,
    seed: Annotated[
        int | None, typer.Option(help="Seed of the random movers (default: a fresh one).")
    ] = None,
    show: ShowOption = False,
) -> None:
    """Play one game between random movers and print every joint move and the goals."""
    found = get_game(game)
    seed = _fresh_seed(seed)
    typer.echo(f"{found.id}, seed {seed}")
    print_step = _step_printer(found, show)
    state = found.initial_state()
    steps = 0
    for steps, (joint, state) in enumerate(random_steps(found, random.Random(seed)), start=1):
        print_step(steps, joint, state)
    goals = ", ".join(
        f"{role} {goal}" for role, goal in zip(found.roles, found.goals(state), strict=True)
    )
    typer.echo(f"goals: {goals} (after {steps} steps)")


@app.command()
def conformance(
    files: Annotated[list[Path], typer.Argument(help="Reference files, one JSON game per line.")],
    as_json: JsonOption = False,
) -> None:
    """Replay reference games; check every legal-move set, the end and the goals."""
    reports = []
    errors = 0
    for path in files:
        try:
            report = check_file(path)
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


@app.command()
@_user_errors
def play(
    game: GameArgument,
    player: Annotated[
        list[str],
        typer.Option(
            "--player",
            "-p",
            help="ROLE=PLAYER, once per role. PLAYER: a command, or random, mcts or human.",
        ),
    ],
    start_clock: Annotated[int, typer.Option(help="Time to answer ready, ms.")] = 10_000,
    play_clock: Annotated[int, typer.Option(help="Time for each move, ms.")] = 1_000,
    time_bank: Annotated[int, typer.Option(help="Extra ms per player for the whole match.")] = 0,
    policy: Annotated[Policy, typer.Option(help="What a fault costs.")] = Policy.FORFEIT,
    seed: Annotated[
        int | None, typer.Option(help="Seed for fault replacements (default: fresh).")
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Transcript file (default: matches/results/ID.json).")
    ] = None,
    show: ShowOption = False,
    memory_mb: MemoryOption = _DEFAULT.memory_mb,
    cpu_s: CpuOption = _DEFAULT.cpu_s,
    processes: ProcessesOption = _DEFAULT.processes,
    open_files: OpenFilesOption = _DEFAULT.open_files,
    file_size_mb: FileSizeOption = _DEFAULT.file_size_mb,
) -> None:
    """Play one match between player programs and write its transcript."""
    found = get_game(game)
    limits = Limits(memory_mb, cpu_s, processes, open_files, file_size_mb)
    seats = [replace(spec, limits=limits) for spec in parse_seats(found, player)]
    clocks = Clocks(start_clock, play_clock, time_bank)
    seed = _fresh_seed(seed)
    match_id = new_match_id(found.id)
    out = out or Path("matches") / "results" / f"{match_id}.json"
    check_writable(out)
    players = [
        make_player(spec, out.with_name(f"{out.stem}.{role}.log"), show=typer.echo)
        for role, spec in zip(found.roles, seats, strict=True)
    ]
    typer.echo(
        f"{match_id}: {found.id}, "
        + ", ".join(f"{r} {s.name}" for r, s in zip(found.roles, seats, strict=True))
    )
    on_step = _step_printer(found, show)
    _prepare_sandbox()
    setup = MatchSetup(match_id, found, players, clocks, policy, seed)
    try:
        transcript = asyncio.run(_stopped_by_sigterm(play_fresh(setup, out, on_step)))
    except (KeyboardInterrupt, asyncio.CancelledError):
        _error(f"interrupted; the match is recorded as aborted in {out}")
        raise typer.Exit(130) from None
    for fault in transcript.faults:
        typer.echo(_fault_line(fault))
    typer.echo(_result_line(transcript))
    typer.echo(f"transcript: {out}")


FormatOption = Annotated[Format, typer.Option("--format", help="How to print the standings.")]


def _print_standings(results: Path, fmt: Format, as_json: bool) -> None:
    """Compute standings from a results directory and print them; exit 1 if a file was bad."""
    if not results.is_dir():
        raise RefereeError(f"{results}: no such results directory")
    transcripts, problems = load_results(results)
    for problem in problems:
        _error(f"left out of the standings: {problem}")
    typer.echo(render(compute(transcripts), Format.JSON if as_json else fmt))
    if problems:
        raise typer.Exit(EXIT_FAILED)


def _progress_bar(*columns: ProgressColumn, transient: bool = False) -> Progress:
    """A bar on standard error: name, bar, done/total, the given columns, time left."""
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        *columns,
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=transient,
    )


class _ProgressBar(Observer):
    """A progress bar on standard error, and a line for every finished match above it."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.progress = _progress_bar(
            TextColumn("running {task.fields[running]}, faults {task.fields[faults]}, ETA")
        )
        self.task = self.progress.add_task(name, total=None, running=0, faults=0)
        self.done = self.total = self.running = self.faults = 0
        self.shown = False

    def close(self) -> None:
        """Leave the bar as it last was, on its own line."""
        if self.shown:
            self.progress.stop()
            self.shown = False

    def planned(self, total: int, done: int) -> None:
        self.total, self.done = total, done
        self.progress.update(self.task, total=total, completed=done)
        # Shown from here on: problems found before the first match are errors, not progress.
        self.progress.start()
        self.shown = True
        if done:
            self.progress.console.print(f"{self.name}: {done} of {total} matches already played")

    def started(self, match: ScheduledMatch) -> None:
        self.running += 1
        self.progress.update(self.task, running=self.running)

    def finished(self, match: ScheduledMatch, transcript: Transcript) -> None:
        self.running -= 1
        self.done += 1
        self.faults += len(transcript.faults)
        goals = ", ".join(
            f"{seat.player} {(transcript.goals or {}).get(seat.role)}" for seat in transcript.seats
        )
        faults = f", {len(transcript.faults)} faults" if transcript.faults else ""
        self.progress.console.print(
            f"[{self.done}/{self.total}] {match.match_id}: {goals}"
            f" ({transcript.end_reason}{faults})",
            markup=False,
            highlight=False,
        )
        self.progress.update(self.task, advance=1, running=self.running, faults=self.faults)

    def replaced(self, path: Path, problem: str) -> None:
        self.progress.console.print(f"will play again: {problem}", markup=False, highlight=False)


@app.command()
@_user_errors
def tournament(
    config: Annotated[Path, typer.Argument(help="Tournament config, YAML.")],
    restart: Annotated[
        bool, typer.Option("--restart", help="Delete earlier results and start over.")
    ] = False,
    fmt: FormatOption = Format.TABLE,
    as_json: JsonOption = False,
) -> None:
    """Run a round-robin tournament (or resume it) and print the standings."""
    settings = load_config(config)
    _prepare_sandbox()
    bar = _ProgressBar(settings.name)
    try:
        asyncio.run(_stopped_by_sigterm(run_tournament(settings, bar, restart)))
    except (KeyboardInterrupt, asyncio.CancelledError):
        bar.close()
        _error("interrupted; run the same command again to play the remaining matches")
        raise typer.Exit(130) from None
    finally:
        bar.close()
    typer.echo(f"results: {settings.output}", err=True)
    _print_standings(settings.output, fmt, as_json)


@app.command()
@_user_errors
def standings(
    results: Annotated[Path, typer.Argument(help="A tournament's results directory.")],
    fmt: FormatOption = Format.TABLE,
    as_json: JsonOption = False,
) -> None:
    """Compute standings from the transcripts in a results directory."""
    _print_standings(results, fmt, as_json)


def _select_games(text: str) -> list[Game]:
    """`all`, or game ids separated by commas."""
    if text.strip() == "all":
        return list(GAMES.values())
    return [get_game(game_id.strip()) for game_id in text.split(",") if game_id.strip()]


@app.command("validate")
@_user_errors
def validate_command(
    command: Annotated[str, typer.Argument(help="The program: a command, or random or mcts.")],
    games: Annotated[str, typer.Option(help="all, or game ids separated by commas.")] = "all",
    matches_per_role: Annotated[
        int, typer.Option(min=1, help="Matches in one process per game and role.")
    ] = 2,
    start_clock: Annotated[int, typer.Option(help="Time to answer ready, ms.")] = 10_000,
    play_clock: Annotated[int, typer.Option(help="Time for each move, ms.")] = 1_000,
    as_json: JsonOption = False,
    keep: Annotated[
        Path | None, typer.Option(help="Keep the transcripts and logs in this directory.")
    ] = None,
    memory_mb: MemoryOption = _DEFAULT.memory_mb,
    cpu_s: CpuOption = _DEFAULT.cpu_s,
    processes: ProcessesOption = _DEFAULT.processes,
    open_files: OpenFilesOption = _DEFAULT.open_files,
    file_size_mb: FileSizeOption = _DEFAULT.file_size_mb,
) -> None:
    """Check that a player program is fit for a tournament: play it against random and judge."""
    selected = _select_games(games)
    if not selected:
        raise RefereeError("--games: name at least one game, or all")
    limits = Limits(memory_mb, cpu_s, processes, open_files, file_size_mb)
    spec = replace(player_spec(command, "submitted"), limits=limits)
    if spec.argv == (HUMAN,):
        raise RefereeError("validate checks a program; a person cannot be validated")
    problem = spec.missing_program()
    if problem:
        raise RefereeError(problem)
    clocks = Clocks(start_clock, play_clock)
    if keep is not None:
        check_writable_dir(keep, "--keep")
    _prepare_sandbox()
    with contextlib.ExitStack() as stack:
        workdir = keep or Path(
            stack.enter_context(tempfile.TemporaryDirectory(prefix="referee-validate-"))
        )
        progress = _progress_bar(transient=True)
        task = progress.add_task("validate", total=None)

        def advance(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        try:
            with progress:
                report = asyncio.run(
                    _stopped_by_sigterm(
                        validate(spec, selected, matches_per_role, clocks, workdir, advance)
                    )
                )
        except (KeyboardInterrupt, asyncio.CancelledError):
            _error("interrupted; nothing was judged")
            raise typer.Exit(130) from None
    if as_json:
        typer.echo(json.dumps(report.to_json(), indent=2))
    else:
        rows = [(c.name, c.verdict, c.description, c.detail) for c in report.checks]
        typer.echo(tabulate(rows, headers=["check", "result", "what", "detail"]))
        failed = [c.name for c in report.checks if c.verdict is Verdict.FAIL]
        warned = [c.name for c in report.checks if c.verdict is Verdict.WARN]
        summary = (
            f"FAIL ({', '.join(failed)})"
            if failed
            else "PASS" + (f" with warnings ({', '.join(warned)})" if warned else "")
        )
        typer.echo(f"\nlimits: {report.limits.summary()}")
        typer.echo(f"protections: {_protection_summary(report.protections)}")
        typer.echo(
            f"verdict: {summary}; {report.matches} matches in {report.seconds:.1f} s"
            f" (bound {report.bound_s:.0f} s)"
            + (f"; transcripts and logs in {keep}" if keep else "")
        )
    if report.verdict is Verdict.FAIL:
        raise typer.Exit(EXIT_FAILED)


def _protection_summary(protections: Protections) -> str:
    """The protections of `referee doctor` in one line, the missing ones last."""
    rows = protections.rows()
    text = ", ".join(name for name, active, _ in rows if active)
    missing = [name for name, active, _ in rows if not active]
    return text + (f"; not on this machine: {', '.join(missing)}" if missing else "")


def _frame_text(game: Game, frame: Frame) -> str:
    """A replayed step as text: its joint move with response times, its faults, the board."""
    lines = [_step_line(frame.step, frame.moves, frame.times_ms) if frame.step else "start"]
    lines += [_fault_line(fault) for fault in frame.faults]
    return "\n".join([*lines, game.render(frame.state), ""])


def _match_header(transcript: Transcript) -> str:
    seats = ", ".join(f"{seat.role} {seat.player}" for seat in transcript.seats)
    clocks = transcript.clocks
    return (
        f"{transcript.match_id}: {transcript.game}, {seats}; start clock {clocks['start_ms']} ms,"
        f" play clock {clocks['play_ms']} ms, time bank {clocks['time_bank_ms']} ms,"
        f" policy {transcript.policy}"
    )


def _verdict_line(verdict: FileVerdict) -> str:
    if verdict.outcome is Outcome.VERIFIED:
        assert verdict.replayed is not None
        transcript = verdict.replayed.transcript
        return f"{verdict.path}: verified; {transcript.game}, {_result_line(transcript)}"
    return f"{verdict.outcome.upper()} {verdict.problem}"


def _verify_directory(directory: Path, as_json: bool) -> None:
    """Verify every transcript in a directory, print a summary by game; exit 1 if one failed."""
    paths = transcript_files(directory)
    if not paths:
        raise RefereeError(f"{directory}: no transcripts (*.json) in this directory")
    progress = _progress_bar(transient=True)
    task = progress.add_task("verify", total=None)
    with progress:
        verdicts = verify_files(
            paths, lambda done, total: progress.update(task, completed=done, total=total)
        )
    rows = summary(verdicts)
    failed = sum(row[2] for row in rows)
    if as_json:
        report = {
            "directory": str(directory),
            "verified": len(verdicts) - failed,
            "failed": failed,
            "by_game": [{"game": g, "verified": v, "failed": f} for g, v, f in rows],
            "files": [verdict.to_json() for verdict in verdicts],
        }
        typer.echo(json.dumps(report, indent=2))
    else:
        for verdict in verdicts:
            if verdict.outcome is not Outcome.VERIFIED:
                typer.echo(_verdict_line(verdict))
        total = ("total", len(verdicts) - failed, failed)
        typer.echo(tabulate([*rows, total], headers=["game", "verified", "failed"]))
    if failed:
        raise typer.Exit(EXIT_FAILED)


def _show_replay(replayed: Replay, step: int | None, watch: bool, delay: float) -> None:
    """Print the frames of a replay: all, only step N, or one at a time with --watch."""
    game, transcript = replayed.game, replayed.transcript
    assert game is not None
    frames = replayed.frames
    if step is not None:
        if step > len(transcript.steps):
            raise RefereeError(f"--step {step}: the match has {len(transcript.steps)} steps")
        frames = [frame for frame in frames if frame.step == step]
    clear = watch and sys.stdout.isatty()
    typer.echo(_match_header(transcript))
    for number, frame in enumerate(frames):
        if watch and number:
            time.sleep(delay)
            if clear:
                typer.echo("\x1b[2J\x1b[H" + _match_header(transcript))
        typer.echo(_frame_text(game, frame))
    if replayed.verified:
        typer.echo(_result_line(transcript))


@app.command("replay")
@_user_errors
def replay_command(
    path: Annotated[Path, typer.Argument(help="A transcript, or a results directory to verify.")],
    verify: Annotated[
        bool, typer.Option("--verify", help="Check the transcript against the rules; no boards.")
    ] = False,
    step: Annotated[
        int | None, typer.Option(min=0, help="Show only the board after step N (0: the start).")
    ] = None,
    watch: Annotated[
        bool, typer.Option("--watch", help="Play the match back in the terminal, step by step.")
    ] = False,
    delay: Annotated[float, typer.Option(min=0, help="Seconds between steps with --watch.")] = 1.0,
    as_json: JsonOption = False,
) -> None:
    """Replay a match with the rules: show its boards, or verify it (a directory: every one)."""
    if path.is_dir():
        if step is not None or watch:
            raise RefereeError(f"{path}: --step and --watch show one transcript, not a directory")
        _verify_directory(path, as_json)
        return
    if not path.exists():
        raise RefereeError(f"{path}: no such transcript or directory")
    verdict = verify_file(path)
    replayed = verdict.replayed
    if as_json:
        report = verdict.to_json()
        if not verify and replayed is not None and replayed.game is not None:
            report["frames"] = [_frame_json(replayed.game, frame) for frame in replayed.frames]
        typer.echo(json.dumps(report, indent=2))
    elif verify or replayed is None or replayed.game is None:
        typer.echo(_verdict_line(verdict))
    else:
        try:
            _show_replay(replayed, step, watch, delay)
        except KeyboardInterrupt:
            raise typer.Exit(130) from None
        if not replayed.verified:
            typer.echo(_verdict_line(verdict))
    if verdict.outcome is not Outcome.VERIFIED:
        raise typer.Exit(EXIT_FAILED)


def _frame_json(game: Game, frame: Frame) -> dict[str, Any]:
    return {
        "step": frame.step,
        "moves": frame.moves,
        "times_ms": frame.times_ms,
        "faults": [asdict(fault) for fault in frame.faults],
        "terminal": game.is_terminal(frame.state),
        "board": game.render(frame.state),
    }


class ExportFormat(StrEnum):
    """Layouts a transcript can be exported in."""

    GGP = "ggp"


@app.command()
@_user_errors
def export(
    transcript: Annotated[Path, typer.Argument(help="A transcript file.")],
    fmt: Annotated[
        ExportFormat, typer.Option("--format", help="ggp: the match JSON of the GGP managers.")
    ] = ExportFormat.GGP,
    out: Annotated[Path | None, typer.Option(help="Write here instead of stdout.")] = None,
) -> None:
    """Export a verified transcript for other tools."""
    if not transcript.is_file():
        raise RefereeError(f"{transcript}: no such transcript file")
    verdict = verify_file(transcript)
    if verdict.replayed is None or not verdict.replayed.verified:
        typer.echo(_verdict_line(verdict), err=True)
        raise typer.Exit(EXIT_FAILED)
    text = json.dumps(to_ggp(verdict.replayed.transcript), indent=2) + "\n"
    if out is None:
        typer.echo(text, nl=False)
    else:
        check_writable(out)
        write_atomic(out, text)


@app.command()
def doctor(as_json: JsonOption = False) -> None:
    """Say which protections against misbehaving players this machine gives."""
    rows = machine_protections().rows()
    if as_json:
        typer.echo(json.dumps(machine_protections().to_json(), indent=2))
        return
    table = [(name, "yes" if active else "NO", how) for name, active, how in rows]
    typer.echo(tabulate(table, headers=["protection", "active", "how"]))


async def _stopped_by_sigterm(work: Coroutine[Any, Any, T]) -> T:
    """Run `work`; SIGTERM cancels it as Ctrl-C does, so players are ended and records written."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    loop.add_signal_handler(signal.SIGTERM, task.cancel)
    try:
        return await work
    finally:
        loop.remove_signal_handler(signal.SIGTERM)


def main(args: list[str] | None = None) -> None:
    """Entry point of the `referee` console script: a usage error is one line, exit 2."""
    args = sys.argv[1:] if args is None else args
    try:
        code = app(args or ["--help"], prog_name="referee", standalone_mode=False)
    except typer.TyperException as error:
        # Typer's own usage errors carry the command they were found in (`ctx`).
        context = getattr(error, "ctx", None)
        command = context.command_path if context is not None else "referee"
        _error(f"{command}: {error.format_message()} (see {command} --help)")
        code = error.exit_code
    except typer.Abort:
        _error("interrupted")
        code = 130
    sys.exit(code or 0)
