"""`referee play`, `replay`, `export`, `import`: one match played, replayed or verified, and
its transcript exchanged with other tools."""

import contextlib
import json
from dataclasses import replace
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from referee.cli.failures import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    say_error,
    user_errors,
)
from referee.cli.options import (
    RESULTS_DIR,
    GameArgument,
    JsonOption,
    KeyOption,
    PlayClockOption,
    ShowOption,
    SigningKeyOption,
    StartClockOption,
    TraceOption,
    TranscriptOutOption,
    fresh_seed,
    limit_options,
    state_options,
)
from referee.errors import RefereeError, TranscriptError
from referee.games import StateLimits, get_game
from referee.policy import MAX_SEED, Policy
from referee.sandbox.limits import Limits

# What a command runs is imported when it runs: every command's help and shell completion
# start with this module, and need none of it.


@user_errors
@limit_options
@state_options
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
      referee play matches/rulesheets/tictactoe.kif -p xplayer=mcts -p oplayer=random
    """
    from referee.cli import present
    from referee.cli.results import key_note
    from referee.cli.running import open_trace, run_interruptible
    from referee.cli.sandbox import prepare_sandbox
    from referee.clock import Clocks, ggp_seconds
    from referee.match import MatchSetup, new_match_id, play_fresh
    from referee.players.base import PlayerKind
    from referee.players.builtin import make_player, parse_seats
    from referee.players.trace import trace_channel
    from referee.records.files import check_writable
    from referee.records.signing import results_key

    found = get_game(game, states)
    seats = [replace(spec, limits=limits) for spec in parse_seats(found, player)]
    clocks = Clocks(start_clock, play_clock, time_bank)
    if any(spec.kind is PlayerKind.HTTP for spec in seats):
        ggp_seconds(clocks)
    seed = fresh_seed(seed)
    match_id = new_match_id(found.id)
    out = out or RESULTS_DIR / f"{match_id}.json"
    check_writable(out)
    key, created = results_key(out.parent, signing_key)
    with contextlib.ExitStack() as stack:
        tracer = open_trace(stack, trace)
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
        transcript = run_interruptible(
            play_fresh(setup, out, key, on_step),
            f"interrupted; the match is recorded as aborted in {out}",
            stop_progress=lambda: None,  # a match prints its steps, not a bar
        )
    for fault in transcript.faults:
        typer.echo(present.fault_line(fault))
    typer.echo(present.result_line(transcript))
    typer.echo(f"transcript: {out}")
    typer.echo(key_note(key, created, out.parent))
    # A program that never got ready (it died, was silent, or said something else): the
    # reason in one line, not only in its log. The match is recorded all the same: its
    # forfeit is a result.
    unready = [fault for fault in transcript.faults if fault.step == 0]
    for fault in unready:
        role = found.role_index(fault.role)
        say_error(present.unready_line(fault, players[role], transcript.seats[role].log))
    if unready:
        raise typer.Exit(EXIT_FAILED)
    if transcript.rules_fault is not None:
        say_error(present.rules_fault_line(transcript.rules_fault))
        raise typer.Exit(EXIT_BAD_INPUT)


@user_errors
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
        typer.Option(
            min=0,
            metavar="N",
            help="Show only the board after step N (0: the start); with --seat, its lines.",
        ),
    ] = None,
    watch: Annotated[
        bool, typer.Option("--watch", help="Play the match back in the terminal, step by step.")
    ] = False,
    delay: Annotated[
        float, typer.Option(min=0, metavar="SECONDS", help="Seconds between steps with --watch.")
    ] = 1.0,
    seat: Annotated[
        str | None,
        typer.Option(
            metavar="ROLE",
            help="Show what ROLE's seat was told, step by step, instead of the boards: the"
            " protocol's lines to it and its answers (in a game of imperfect information, its"
            " own moves and percepts only).",
        ),
    ] = None,
    as_json: JsonOption = False,
    key: KeyOption = None,
) -> None:
    """Replay a match with the rules: show its boards, or verify it (a directory: every one).

    \b
    Examples:
      referee replay matches/results/demo/MATCH.json --watch
      referee replay matches/results/demo/MATCH.json --seat ROLE
      referee replay matches/results/demo
    """
    from referee.cli import present
    from referee.cli.results import expected_key
    from referee.cli.running import counting
    from referee.records.seats import seat_named, seat_view
    from referee.records.transcript import read_transcript, transcript_files
    from referee.records.verify import Outcome, verify_file, verify_paths

    if path.is_dir():
        if step is not None or watch or seat is not None:
            raise RefereeError(
                f"{path}: --step, --watch and --seat show one transcript, not a directory"
            )
        paths = transcript_files(path)
        if not paths:
            raise RefereeError(f"{path}: no transcripts (*.json) in this directory")
        with counting("verify") as counted:
            report = verify_paths(path, paths, expected_key(path, key), counted)
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
    if seat is not None and (verify or watch):
        raise RefereeError(
            "--seat prints what a seat was told; --verify and --watch are for the boards"
        )
    if step is not None or seat is not None:
        # Told from the record, before a replay that can take long.
        try:
            record = read_transcript(path)
        except TranscriptError:
            record = None  # the verdict says why
        last = None if record is None else record.last_step
        if step is not None and last is not None and step > last:
            raise RefereeError(f"--step {step}: the match ends at step {last}")
        if seat is not None and record is not None:
            seat = seat_named(record.game, [s.role for s in record.seats], seat)
    verdict = verify_file(path, expected_key(path.parent, key))
    # Bad input: not a transcript at all (one of another schema version is one, unchecked).
    unreadable = verdict.outcome is Outcome.UNREADABLE
    if unreadable and not as_json:
        raise RefereeError(verdict.problem or f"{path}: not a transcript")
    replayed = verdict.replayed
    view = None
    if seat is not None and replayed is not None and replayed.game is not None:
        view = seat_view(
            replayed.transcript, replayed.game, replayed.frames, seat, replayed.verified
        )
        if step is not None:
            view = replace(view, steps=[s for s in view.steps if s.step == step])
    if as_json:
        data = verdict.to_json()
        if view is not None:
            data["seat"] = view.to_json()
        elif not verify and replayed is not None and replayed.game is not None:
            data["frames"] = [
                frame.to_json(replayed.game)
                for frame in replayed.frames
                if step is None or frame.step == step
            ]
        typer.echo(json.dumps(data, indent=2))
    elif verify or replayed is None or replayed.game is None:
        typer.echo(present.verdict_lines(verdict))
    elif view is not None:
        typer.echo(present.seat_text(replayed.transcript, view, step is None))
        if verdict.outcome is not Outcome.VERIFIED:
            typer.echo(present.verdict_line(verdict))
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


@user_errors
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
    from referee.cli import present
    from referee.cli.results import expected_key
    from referee.records.files import check_writable, write_atomic
    from referee.records.ggp import to_ggp
    from referee.records.verify import Outcome, verify_file

    if not transcript.is_file():
        raise RefereeError(f"{transcript}: no such transcript file")
    verdict = verify_file(transcript, expected_key(transcript.parent, None))
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


@user_errors
@state_options
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
    from referee.ggp.messages import plain_name
    from referee.records.files import check_writable, write_atomic
    from referee.records.ggp import from_ggp
    from referee.records.signing import SIGNATURE_FIELD, results_key
    from referee.records.transcript import read_json

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
